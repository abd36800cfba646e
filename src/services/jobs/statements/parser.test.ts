import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { StatementError } from './errors.ts';
import { isLakeportText, parseStatement, redactedSecretText, type AlterDatasetSort, type CommentOn, type CreateSecret, type CreateView } from './parser.ts';

/** The error a statement gives, with the text it points at. */
function errorOf(sql: string) {
  try {
    parseStatement(sql);
  } catch (error) {
    if (!(error instanceof StatementError)) throw error;
    return { code: error.code, message: error.message, at: error.span ? sql.slice(error.span.start, error.span.end) : undefined };
  }
  throw new Error(`parsed: ${sql}`);
}

const secret = (sql: string) => parseStatement(sql) as CreateSecret;

describe('recognising Lakeport statements', () => {
  it.each([
    "CREATE SECRET s IN ws (TYPE 'http_endpoint', URL 'https://x.example')",
    'create or replace secret s in ws ()',
    'CREATE PERSISTENT SECRET s (TYPE s3)',
    'CREATE TEMP SECRET s (TYPE s3)',
    'ALTER SECRET s SET x',
    'GRANT reader ON ws.* TO bob',
    'revoke reader on ws.* from bob',
    'CREATE TAG t ON a.b.c',
    'DROP TAG t ON a.b.c',
    'ALTER WORKSPACE ws SET deletion_protection TO ON',
    '  /* lead */ -- comment\n GRANT reader ON ws.* TO bob',
    'SELECT 1; GRANT reader ON ws.* TO bob',
    "SELECT 1; CREATE SECRET s IN ws (TYPE 'x', KEY 'literal')",
    "SELECT 1 CREATE SECRET s IN ws (TYPE 'x', KEY 'literal')",
    // Unicode blanks and a byte-order mark are spaces; look-alikes of secret statements are ours to refuse.
    "\uFEFFCREATE SECRET s IN ws (TYPE 'x')",
    "CREATE\u00A0SECRET s IN ws (TYPE 'x')",
    "CREATE\u2003OR\u3000REPLACE SECRET s IN ws (TYPE 'x')",
    'CRATE SECRET s IN ws',
    'create secrets s in ws',
    'CREATE SCERET s',
    'ALTR SECRET s SET x',
    "SELECT secrets FROM t (KEY_ID 'x')",
    "SELECT 1 FROM t (TYPE 's3')",
  ])('%s', (sql) => {
    expect(isLakeportText(sql)).toBe(true);
  });

  it.each([
    'SELECT 1',
    "SELECT 'CREATE SECRET x' AS s",
    'SELECT "create", "secret" FROM t',
    '-- CREATE SECRET s\nSELECT 1',
    'CREATE TABLE t (x INT)',
    'DROP TABLE t',
    'ALTER TABLE t ADD x INT',
    'SELECT secret FROM ws.c.d WHERE grant = 1',
    'SELECT created secret FROM t',
    'CREATE TABLE secret AS SELECT 1',
    "SELECT secret, type FROM t WHERE type = 's3' AND key_id = :k",
    'SELECT\u00A01',
  ])('not %s', (sql) => {
    expect(isLakeportText(sql)).toBe(false);
  });
});

describe('CREATE SECRET', () => {
  it('parses the whole shape, with literals and parameters', () => {
    const s = secret("CREATE OR REPLACE SECRET gcs_reader IN sales (TYPE 'gcs_service_account', KEY :sa_key, SCOPE 'gs://bucket/prefix/');");
    expect(s).toMatchObject({ kind: 'create_secret', orReplace: true, ifNotExists: false, name: { value: 'gcs_reader' }, workspace: { value: 'sales' }, type: { value: 'gcs_service_account' } });
    expect(s.options.map((o) => [o.key.value, o.value])).toEqual([
      ['KEY', expect.objectContaining({ kind: 'parameter', name: 'sa_key' })],
      ['SCOPE', expect.objectContaining({ kind: 'literal', text: 'gs://bucket/prefix/' })],
    ]);
  });

  it('is case-insensitive in keywords and keys and lowercases names and TYPE', () => {
    const s = secret("create secret if not exists My_Secret in SALES (type 'S3_Access_Key', access_key_id 'A', Secret_Access_Key 'b', scope 's3://b/')");
    expect(s).toMatchObject({ ifNotExists: true, name: { value: 'my_secret' }, workspace: { value: 'sales' }, type: { value: 's3_access_key' } });
    expect(s.options.map((o) => o.key.value)).toEqual(['ACCESS_KEY_ID', 'SECRET_ACCESS_KEY', 'SCOPE']);
  });

  it('accepts quoted identifiers as names (lowercased, keywords allowed)', () => {
    const s = secret(`CREATE SECRET "In" IN "Sales" (TYPE 'http_endpoint', URL 'https://x.example')`);
    expect(s.name.value).toBe('in');
    expect(s.workspace.value).toBe('sales');
  });

  it("decodes '' inside literals, and $$…$$ verbatim", () => {
    const s = secret(`CREATE SECRET s IN w (TYPE 'http_endpoint', URL 'https://x.example/it''s', HEADER_AUTHORIZATION $$Bearer a'b"c$$, HEADER_X_API_KEY $t$x$$y$t$)`);
    expect(s.options.map((o) => (o.value.kind === 'literal' ? o.value.text : ''))).toEqual(['https://x.example/it\'s', `Bearer a'b"c`, 'x$$y']);
  });

  it('keeps the place of every part', () => {
    const sql = "CREATE SECRET s IN w (TYPE 'http_endpoint', URL :u)";
    const s = secret(sql);
    expect(sql.slice(s.options[0].value.start, s.options[0].value.end)).toBe(':u');
    expect(sql.slice(s.type.start, s.type.end)).toBe("'http_endpoint'");
    expect(sql.slice(s.workspace.start, s.workspace.end)).toBe('w');
  });

  it('reads KEY:p (no blank) as a parameter too', () => {
    const s = secret("CREATE SECRET s IN w (TYPE 'http_endpoint', URL:u)");
    expect(s.options[0].value).toMatchObject({ kind: 'parameter', name: 'u' });
  });

  it('allows comments anywhere and one trailing ;', () => {
    const s = secret("CREATE /* c */ SECRET s -- x\n IN w (TYPE 'http_endpoint', /* k */ URL :u) ; ;");
    expect(s.name.value).toBe('s');
  });

  describe('rule 1: the name', () => {
    it.each([
      ['CREATE SECRET 1abc IN w (TYPE \'http_endpoint\', URL :u)', 'INVALID_NAME', '1abc'],
      [`CREATE SECRET ${'a'.repeat(64)} IN w (TYPE 'http_endpoint', URL :u)`, 'INVALID_NAME', 'a'.repeat(64)],
      ['CREATE SECRET "a-b" IN w (TYPE \'http_endpoint\', URL :u)', 'INVALID_NAME', '"a-b"'],
      ['CREATE SECRET "" IN w (TYPE \'http_endpoint\', URL :u)', 'INVALID_NAME', '""'],
      ['CREATE SECRET "név" IN w (TYPE \'http_endpoint\', URL :u)', 'INVALID_NAME', '"név"'],
      ["CREATE SECRET IN w (TYPE 'http_endpoint', URL :u)", 'SYNTAX_ERROR', 'w'],
      ["CREATE SECRET (TYPE 'http_endpoint', URL :u)", 'SYNTAX_ERROR', '('],
      ["CREATE SECRET w.s (TYPE 'http_endpoint', URL :u)", 'SYNTAX_ERROR', '.'],
    ])('%s → %s', (sql, code, at) => {
      expect(errorOf(sql)).toMatchObject({ code, at });
    });

    it('takes 1 to 63 characters, starting with a letter or underscore', () => {
      expect(secret(`CREATE SECRET ${'a'.repeat(63)} IN w (TYPE 'http_endpoint', URL :u)`).name.value).toHaveLength(63);
      expect(secret(`CREATE SECRET _1 IN w (TYPE 'http_endpoint', URL :u)`).name.value).toBe('_1');
      expect(secret(`CREATE SECRET x IN w (TYPE 'http_endpoint', URL :u)`).name.value).toBe('x');
    });
  });

  describe('rule 2: IN <workspace>, bare', () => {
    it.each([
      ["CREATE SECRET s (TYPE 'http_endpoint', URL :u)", 'SYNTAX_ERROR', '(', /IN <workspace> is required/],
      ["CREATE SECRET s IN ws.coll (TYPE 'http_endpoint', URL :u)", 'SYNTAX_ERROR', '.', /bare workspace name/],
      ["CREATE SECRET s IN (TYPE 'http_endpoint', URL :u)", 'SYNTAX_ERROR', '(', /workspace name/],
      ["CREATE SECRET s IN 'ws' (TYPE 'http_endpoint', URL :u)", 'SYNTAX_ERROR', "'ws'", /workspace name/],
      ["CREATE SECRET s IN \"a b\" (TYPE 'http_endpoint', URL :u)", 'INVALID_NAME', '"a b"', /workspace name/],
    ])('%s', (sql, code, at, message) => {
      expect(errorOf(sql)).toMatchObject({ code, at, message: expect.stringMatching(message) });
    });

    it('takes a workspace name that starts with a digit', () => {
      expect(secret("CREATE SECRET s IN 2024ws (TYPE 'http_endpoint', URL :u)").workspace.value).toBe('2024ws');
    });
  });

  describe('rule 3: TYPE is a string literal', () => {
    it.each([
      ["CREATE SECRET s IN w (TYPE :t, URL :u)", /not a parameter/, ':t'],
      ["CREATE SECRET s IN w (TYPE:t, URL :u)", /not a parameter/, ':'],
      ['CREATE SECRET s IN w (TYPE http_endpoint, URL :u)', /string literal/, 'http_endpoint'],
      ["CREATE SECRET s IN w (URL :u)", /TYPE is required/, undefined],
      ["CREATE SECRET s IN w ()", /TYPE/, ')'],
    ])('%s', (sql, message, at) => {
      const error = errorOf(sql);
      expect(error.message).toMatch(message);
      if (at !== undefined) expect(error.at).toBe(at);
    });
  });

  describe('rule 4: options take a :parameter or a literal; repeated keys are errors', () => {
    it.each([
      ["CREATE SECRET s IN w (TYPE 'http_endpoint', URL :u, URL :v)", 'DUPLICATE_SECRET_KEY', 'URL'],
      ["CREATE SECRET s IN w (TYPE 'http_endpoint', url :u, URL :v)", 'DUPLICATE_SECRET_KEY', 'URL'],
      ["CREATE SECRET s IN w (TYPE 'http_endpoint', TYPE 'http_endpoint', URL :u)", 'DUPLICATE_SECRET_KEY', 'TYPE'],
      ["CREATE SECRET s IN w (TYPE 'http_endpoint', URL = 'x')", 'SYNTAX_ERROR', '='],
      ["CREATE SECRET s IN w (TYPE 'http_endpoint', URL $u)", 'UNSUPPORTED_PARAMETER', '$u'],
      ["CREATE SECRET s IN w (TYPE 'http_endpoint', URL ?)", 'UNSUPPORTED_PARAMETER', '?'],
      ["CREATE SECRET s IN w (TYPE 'http_endpoint', URL 42)", 'SYNTAX_ERROR', '42'],
      ["CREATE SECRET s IN w (TYPE 'http_endpoint', URL)", 'SYNTAX_ERROR', ')'],
      ["CREATE SECRET s IN w (TYPE 'http_endpoint', URL :u,)", 'SYNTAX_ERROR', ')'],
      ["CREATE SECRET s IN w (TYPE 'http_endpoint' URL :u)", 'SYNTAX_ERROR', 'URL'],
      ["CREATE SECRET s IN w (TYPE 'http_endpoint', URL :u", 'SYNTAX_ERROR', ':u'],
      ["CREATE SECRET s IN w (TYPE 'http_endpoint', 'URL' :u)", 'SYNTAX_ERROR', "'URL'"],
      ["CREATE SECRET s IN w (TYPE 'http_endpoint', URL 'unterminated)", 'SYNTAX_ERROR', "'unterminated)"],
      ["CREATE SECRET s IN w (TYPE 'http_endpoint', URL $$unterminated)", 'SYNTAX_ERROR', '$$unterminated)'],
      ["CREATE SECRET s IN w (TYPE 'http_endpoint', URL E'x\\n')", 'SYNTAX_ERROR', "E'x\\n'"],
    ])('%s → %s', (sql, code, at) => {
      expect(errorOf(sql)).toMatchObject({ code, at });
    });

    it('leaves unknown keys to the type check (they depend on TYPE, which may come later)', () => {
      expect(secret("CREATE SECRET s IN w (NOPE 'x', TYPE 'http_endpoint')").options[0].key.value).toBe('NOPE');
    });
  });

  it('rule 5: there is no ALTER SECRET, and it says what to do instead', () => {
    const error = errorOf("ALTER SECRET s SET KEY 'x'");
    expect(error).toMatchObject({ code: 'STATEMENT_NOT_SUPPORTED', at: 'ALTER SECRET' });
    expect(error.message).toMatch(/CREATE OR REPLACE SECRET/);
  });

  it('rule 6: OR REPLACE with IF NOT EXISTS is a contradiction', () => {
    expect(errorOf("CREATE OR REPLACE SECRET IF NOT EXISTS s IN w (TYPE 'http_endpoint', URL :u)")).toMatchObject({
      code: 'CONTRADICTORY_OPTIONS',
      at: 'OR REPLACE SECRET IF NOT EXISTS',
    });
  });

  it('rule 7: it is the only statement', () => {
    expect(errorOf("CREATE SECRET s IN w (TYPE 'http_endpoint', URL :u); SELECT 1")).toMatchObject({ code: 'MULTIPLE_STATEMENTS', at: 'SELECT' });
    expect(errorOf("CREATE SECRET s IN w (TYPE 'http_endpoint', URL :u) SELECT 1")).toMatchObject({ code: 'SYNTAX_ERROR', at: 'SELECT' });
    expect(errorOf("SELECT 1; CREATE SECRET s IN w (TYPE 'http_endpoint', URL 'x')")).toMatchObject({ code: 'MULTIPLE_STATEMENTS', at: 'CREATE' });
    expect(errorOf("SELECT 1 CREATE SECRET s IN w (TYPE 'http_endpoint', URL 'x')")).toMatchObject({ code: 'MULTIPLE_STATEMENTS', at: 'CREATE' });
  });

  it('reads Unicode blanks as spaces, keeping literal values as written', () => {
    const s = secret("\uFEFFCREATE\u00A0SECRET\u2003s IN\u3000ws (TYPE 'http_endpoint', URL 'https://x.example/a\u00A0b')");
    expect(s).toMatchObject({ name: { value: 's' }, workspace: { value: 'ws' } });
    expect(s.options[0].value).toMatchObject({ kind: 'literal', text: 'https://x.example/a\u00A0b' });
  });

  it('refuses a look-alike of a secret statement, pointing at it', () => {
    expect(errorOf("CRATE SECRET s IN w (TYPE 'http_endpoint', URL 'x')")).toMatchObject({ code: 'SYNTAX_ERROR', at: 'CRATE SECRET' });
    expect(errorOf("CREATE SECRETS s IN w (TYPE 'http_endpoint', URL 'x')")).toMatchObject({ code: 'SYNTAX_ERROR', at: 'CREATE SECRETS' });
    expect(errorOf("create sec\u00ADret s IN w (URL 'x')")).toMatchObject({ code: 'SYNTAX_ERROR', at: 'create sec\u00ADret' });
    expect(errorOf("MAKE SECRET s IN w (TYPE 'http_endpoint', URL 'x')")).toMatchObject({ code: 'SYNTAX_ERROR', at: 'TYPE' });
    expect(errorOf("SELECT secrets FROM t (KEY_ID :k)")).toMatchObject({ code: 'SYNTAX_ERROR', at: 'secrets' });
    expect(errorOf("CRATE SECRET s IN w (TYPE 'http_endpoint', URL 'wJalrXUtnFEMI')").message).not.toMatch(/wJalrXUtnFEMI/);
  });

  it("refuses DuckDB's PERSISTENT / TEMPORARY forms clearly", () => {
    expect(errorOf("CREATE PERSISTENT SECRET s (TYPE s3, KEY_ID 'x')")).toMatchObject({ code: 'STATEMENT_NOT_SUPPORTED', at: 'PERSISTENT' });
    expect(errorOf("CREATE OR REPLACE TEMPORARY SECRET s (TYPE s3)")).toMatchObject({ code: 'STATEMENT_NOT_SUPPORTED', at: 'TEMPORARY' });
  });

  it('never quotes what might be a value in its errors', () => {
    for (const sql of [
      'CREATE SECRET s IN w (TYPE \'s3_access_key\', SECRET_ACCESS_KEY wJalrXUtnFEMI)',
      'CREATE SECRET s IN w (TYPE \'s3_access_key\', SECRET_ACCESS_KEY "wJalrXUtnFEMI")',
      "CREATE SECRET s IN w (TYPE 's3_access_key', SECRET_ACCESS_KEY 'a' wJalrXUtnFEMI)",
      "CREATE SECRET s IN w (TYPE 's3_access_key', SECRET_ACCESS_KEY 'a', wJalrXUtnFEMI)",
      "CREATE SECRET s IN w (TYPE 's3_access_key', SECRET_ACCESS_KEY 'wJalrXUtnFEMI' 'x')",
      "CREATE SECRET s IN w (TYPE 's3_access_key', SECRET_ACCESS_KEY 'a') wJalrXUtnFEMI",
    ]) {
      expect(errorOf(sql).message).not.toMatch(/wJalrXUtnFEMI/);
    }
  });

  it('rule 8: the history text lifts every literal out', () => {
    const s = secret(
      "CREATE OR REPLACE SECRET s3_ro IN Sales ( -- the key: AKIA-IN-A-COMMENT\n TYPE 'storage_b_access_key', ACCESS_KEY_ID 'AKIAEXAMPLE', SECRET_ACCESS_KEY :sk, SCOPE 's3://b/p/')",
    );
    const text = redactedSecretText(s);
    expect(text).toBe("CREATE OR REPLACE SECRET s3_ro IN sales (TYPE 'storage_b_access_key', ACCESS_KEY_ID :redacted_access_key_id, SECRET_ACCESS_KEY :sk, SCOPE :redacted_scope)");
    expect(text).not.toMatch(/AKIA/);
    expect(redactedSecretText(secret("CREATE SECRET IF NOT EXISTS \"in\" IN w (TYPE 'gcs_service_account', KEY 'x', SCOPE :s)"))).toBe(
      'CREATE SECRET IF NOT EXISTS "in" IN w (TYPE \'gcs_service_account\', KEY :redacted_key, SCOPE :s)',
    );
    // and it parses again to the same statement, literals now parameters
    const again = secret(text);
    expect(again.options.every((o) => o.value.kind === 'parameter')).toBe(true);
  });
});

describe('GRANT and REVOKE', () => {
  it.each([
    ['GRANT reader ON sales.* TO bob', 'grant', 'reader', { workspace: 'sales' }, 'bob', 'user'],
    ['grant WRITER on Sales.Orders.* to Bob;', 'grant', 'writer', { workspace: 'sales', collection: 'orders' }, 'bob', 'user'],
    ['GRANT admin ON sales.orders.daily TO USER carol', 'grant', 'admin', { workspace: 'sales', collection: 'orders', dataset: 'daily' }, 'carol', 'user'],
    ["GRANT owner ON 'sales.*' TO SERVICE_ACCOUNT 'svc-loader'", 'grant', 'owner', { workspace: 'sales' }, 'svc-loader', 'service_account'],
    ['GRANT reader ON "Sales"."orders".* TO "Bob.Smith@x.io"', 'grant', 'reader', { workspace: 'sales', collection: 'orders' }, 'Bob.Smith@x.io', 'user'],
    ['GRANT reader ON sales.* TO user', 'grant', 'reader', { workspace: 'sales' }, 'user', 'user'],
    ['REVOKE reader ON sales.* FROM bob', 'revoke', 'reader', { workspace: 'sales' }, 'bob', 'user'],
    ['REVOKE "owner" ON 2024ws.c2.3d FROM bob', 'revoke', 'owner', { workspace: '2024ws', collection: 'c2', dataset: '3d' }, 'bob', 'user'],
    ['REVOKE reader ON ws.c.2024 FROM bob', 'revoke', 'reader', { workspace: 'ws', collection: 'c', dataset: '2024' }, 'bob', 'user'],
  ])('%s', (sql, kind, role, pattern, identity, type) => {
    expect(parseStatement(sql)).toMatchObject({ kind, role: { value: role }, pattern: { value: pattern }, principal: { value: { identity, type } } });
  });

  it.each([
    ['GRANT superuser ON sales.* TO bob', 'SYNTAX_ERROR', 'superuser'],
    ['GRANT reader sales.* TO bob', 'SYNTAX_ERROR', 'sales'],
    ['GRANT reader ON sales TO bob', 'INVALID_PATTERN', 'sales'],
    ['GRANT reader ON * TO bob', 'INVALID_PATTERN', '*'],
    ['GRANT reader ON sales.*.x TO bob', 'SYNTAX_ERROR', '.'],
    ['GRANT reader ON sales.orders TO bob', 'INVALID_PATTERN', 'sales.orders'],
    ['GRANT reader ON a.b.c.d TO bob', 'INVALID_PATTERN', 'a.b.c.d'],
    ["GRANT reader ON 'sales' TO bob", 'INVALID_PATTERN', "'sales'"],
    ['GRANT reader ON sales.* FROM bob', 'SYNTAX_ERROR', 'FROM'],
    ['REVOKE reader ON sales.* TO bob', 'SYNTAX_ERROR', 'TO'],
    ['GRANT reader ON sales.* TO', 'SYNTAX_ERROR', undefined],
    ["GRANT reader ON sales.* TO 'bad name'", 'INVALID_PRINCIPAL', "'bad name'"],
    ['GRANT reader ON sales.* TO :who', 'SYNTAX_ERROR', ':who'],
    ['GRANT reader ON sales.* TO bob, carol', 'SYNTAX_ERROR', ','],
    ['GRANT reader ON sales.* TO bob; GRANT reader ON sales.* TO carol', 'MULTIPLE_STATEMENTS', 'GRANT'],
  ])('%s → %s', (sql, code, at) => {
    const error = errorOf(sql);
    expect(error.code).toBe(code);
    if (at !== undefined) expect(error.at).toBe(at);
  });
});

describe('CREATE TAG and DROP TAG', () => {
  it.each([
    ['CREATE TAG q1_close ON sales.orders.daily', { name: { value: 'q1_close' }, dataset: { value: { workspace: 'sales', collection: 'orders', dataset: 'daily' } } }],
    ['create tag Q1 on Sales.Orders.Daily at (version => 42);', { name: { value: 'q1' }, version: { value: { kind: 'id', snapshotId: 42 } } }],
    ["CREATE TAG 'v1.2-rc' ON a.b.c AT (VERSION => 'q1')", { name: { value: 'v1.2-rc' }, version: { value: { kind: 'tag', name: 'q1' } } }],
    ['CREATE TAG "Final" ON a.b.c', { name: { value: 'final' } }],
  ])('%s', (sql, expected) => {
    expect(parseStatement(sql)).toMatchObject({ kind: 'create_tag', ...expected });
  });

  it.each([
    ['DROP TAG q1 ON a.b.c', { ifExists: false, name: { value: 'q1' } }],
    ["drop tag if exists 'v1.2' on a.b.c", { ifExists: true, name: { value: 'v1.2' } }],
  ])('%s', (sql, expected) => {
    expect(parseStatement(sql)).toMatchObject({ kind: 'drop_tag', ...expected });
  });

  it.each([
    ['CREATE TAG current ON a.b.c', 'INVALID_NAME', 'current'],
    ['CREATE TAG 1st ON a.b.c', 'INVALID_NAME', '1st'],
    ['CREATE TAG t ON a.b', 'SYNTAX_ERROR', undefined],
    ['CREATE TAG t ON a.b.c.d', 'SYNTAX_ERROR', '.'],
    ['CREATE TAG t ON a.b.c AT (VERSION => -1)', 'SYNTAX_ERROR', '-'],
    ['CREATE TAG t ON a.b.c AT (VERSION = > 1)', 'SYNTAX_ERROR', '>'],
    ['CREATE TAG t ON a.b.c AT (TIMESTAMP => 1)', 'SYNTAX_ERROR', 'TIMESTAMP'],
    ['CREATE TAG t ON a.b.c AT (VERSION => :v)', 'SYNTAX_ERROR', ':v'],
    ['CREATE TAG t ON a.b.c AT (VERSION => 1', 'SYNTAX_ERROR', undefined],
    ['CREATE OR REPLACE TAG t ON a.b.c', 'STATEMENT_NOT_SUPPORTED', 'OR REPLACE'],
    ['DROP TAG IF t ON a.b.c', 'SYNTAX_ERROR', 't'],
    ['DROP TAG t', 'SYNTAX_ERROR', undefined],
  ])('%s → %s', (sql, code, at) => {
    const error = errorOf(sql);
    expect(error.code).toBe(code);
    if (at !== undefined) expect(error.at).toBe(at);
  });
});

describe('ALTER WORKSPACE', () => {
  it.each([
    ['ALTER WORKSPACE sales SET deletion_protection TO ON', true],
    ['alter workspace Sales set DELETION_PROTECTION = off;', false],
    ['ALTER WORKSPACE "sales" SET "deletion_protection" TO TRUE', true],
    ['ALTER WORKSPACE sales SET deletion_protection TO false', false],
  ])('%s', (sql, value) => {
    expect(parseStatement(sql)).toMatchObject({ kind: 'alter_workspace', workspace: { value: 'sales' }, property: { value: 'deletion_protection' }, value: { value } });
  });

  it.each([
    ['ALTER WORKSPACE sales SET retention TO ON', 'UNKNOWN_PROPERTY', 'retention'],
    ['ALTER WORKSPACE sales SET deletion_protection ON', 'SYNTAX_ERROR', 'ON'],
    ['ALTER WORKSPACE sales SET deletion_protection TO maybe', 'SYNTAX_ERROR', 'maybe'],
    ["ALTER WORKSPACE sales SET deletion_protection TO 'on'", 'SYNTAX_ERROR', "'on'"],
    ['ALTER WORKSPACE sales.x SET deletion_protection TO ON', 'SYNTAX_ERROR', '.'],
    ['ALTER WORKSPACE SET deletion_protection TO ON', 'SYNTAX_ERROR', 'deletion_protection'],
    ['ALTER WORKSPACE sales RESET deletion_protection', 'SYNTAX_ERROR', 'RESET'],
  ])('%s → %s', (sql, code, at) => {
    expect(errorOf(sql)).toMatchObject({ code, at });
  });
});

describe('views, COMMENT ON and ALTER DATASET', () => {
  it('is recognised, and SELECT texts mentioning views are not', () => {
    for (const sql of ['CREATE VIEW a.b.c AS SELECT 1', 'create or replace view a.b.c as select 1', 'DROP VIEW a.b.c', "COMMENT ON DATASET a.b.c IS 'x'", 'ALTER DATASET a.b.c UNSET SORTED BY']) {
      expect(isLakeportText(sql), sql).toBe(true);
    }
    for (const sql of ['SELECT view FROM a.b.c', "SELECT 'CREATE VIEW' AS x", 'CREATE TEMP VIEW v AS SELECT 1']) expect(isLakeportText(sql), sql).toBe(false);
  });

  it('CREATE VIEW keeps the SELECT as written, with where it starts, and without a trailing ;', () => {
    const sql = "CREATE OR REPLACE VIEW \"Sales\".r.v COMMENT = 'It''s big' AS\n  SELECT 1 AS x -- note\n;";
    const v = parseStatement(sql) as CreateView;
    expect(v).toMatchObject({ kind: 'create_view', orReplace: true, name: { value: { workspace: 'sales', collection: 'r', dataset: 'v' } }, comment: { value: "It's big" } });
    // From after AS to its last token: a trailing comment and ; are not part of it.
    expect(v.query.value).toBe('SELECT 1 AS x');
    expect(sql.slice(v.query.start, v.query.end)).toBe(v.query.value);
    expect(errorOf('CREATE VIEW a.b.c AS')).toMatchObject({ code: 'SYNTAX_ERROR', at: 'AS' });
    expect(errorOf('CREATE VIEW a.b AS SELECT 1')).toMatchObject({ code: 'SYNTAX_ERROR', at: 'AS' });
    expect(errorOf('CREATE VIEW IF NOT EXISTS a.b.c AS SELECT 1')).toMatchObject({ code: 'STATEMENT_NOT_SUPPORTED', at: 'IF' });
    expect(errorOf('CREATE VIEW a.b.c COMMENT 42 AS SELECT 1')).toMatchObject({ code: 'SYNTAX_ERROR', at: '42' });
    expect(errorOf('DROP VIEW a.b.c.d')).toMatchObject({ code: 'SYNTAX_ERROR', at: '.' });
  });

  it('COMMENT ON parses the target, a four-part column name, NULL and BY MODEL', () => {
    const c = parseStatement('COMMENT ON COLUMN a.b.c."Order ID" IS NULL BY MODEL') as CommentOn;
    expect(c).toMatchObject({ kind: 'comment', target: { value: 'column' }, dataset: { value: { workspace: 'a', collection: 'b', dataset: 'c' } }, column: { value: 'Order ID' }, text: { value: null }, byModel: true });
    expect((parseStatement("comment on materialized view a.b.c is $$x$$") as CommentOn)).toMatchObject({ target: { value: 'materialized_view' }, text: { value: 'x' }, byModel: false });
    expect(errorOf("COMMENT ON COLUMN a.b.c IS 'x'")).toMatchObject({ code: 'SYNTAX_ERROR', at: 'IS' });
    expect(errorOf("COMMENT ON DATASET a.b.c IS 'x' BY")).toMatchObject({ code: 'SYNTAX_ERROR' });
    expect(errorOf("COMMENT ON DATASET a.b.c 'x'")).toMatchObject({ code: 'SYNTAX_ERROR', at: "'x'" });
  });

  it('ALTER DATASET dispatches on its action', () => {
    const s = parseStatement('ALTER DATASET a.b.c SET SORTED BY ("Day" DESC, id asc)') as AlterDatasetSort;
    expect(s.keys?.map((k) => k.value)).toEqual([{ column: 'Day', direction: 'desc' }, { column: 'id', direction: 'asc' }]);
    expect((parseStatement('ALTER DATASET a.b.c UNSET SORTED BY;') as AlterDatasetSort).keys).toBeNull();
    expect(errorOf('ALTER DATASET a.b.c SET SORTED BY ()')).toMatchObject({ code: 'SYNTAX_ERROR', at: ')' });
    expect(errorOf('ALTER DATASET a.b.c SET SORTED BY (x) extra')).toMatchObject({ code: 'SYNTAX_ERROR', at: 'extra' });
    expect(errorOf('ALTER DATASET a.b.c RENAME TO d')).toMatchObject({ code: 'SYNTAX_ERROR', at: 'RENAME' });
  });
});

describe('dataset lifecycle statements', () => {
  it.each([
    ['ALTER WORKSPACE sales SET drop_protection TO ON', 'drop_protection', true],
    ['alter workspace sales set History_Protection = false', 'history_protection', false],
  ])('%s', (sql, property, value) => {
    expect(parseStatement(sql)).toMatchObject({ kind: 'alter_workspace', property: { value: property }, value: { value } });
  });

  it('parses each statement', () => {
    expect(parseStatement('DROP DATASET IF EXISTS Sales.Orders."Daily";')).toMatchObject({ kind: 'drop_dataset', ifExists: true, dataset: { value: { workspace: 'sales', collection: 'orders', dataset: 'daily' } } });
    expect(parseStatement('drop dataset a.b.c')).toMatchObject({ kind: 'drop_dataset', ifExists: false });
    expect(parseStatement('UNDROP DATASET a.b.c')).toMatchObject({ kind: 'undrop_dataset', dataset: { value: { dataset: 'c' } } });
    expect(parseStatement('ALTER DATASET a.b.c ROLLBACK TO SNAPSHOT 42')).toMatchObject({ kind: 'alter_dataset_rollback', target: { value: { kind: 'id', snapshotId: 42 } } });
    expect(parseStatement("ALTER DATASET a.b.c ROLLBACK TO TAG 'v1.2-rc'")).toMatchObject({ target: { value: { kind: 'tag', name: 'v1.2-rc' } } });
    expect(parseStatement('ALTER DATASET a.b.c ROLLBACK TO TAG Q1')).toMatchObject({ target: { value: { kind: 'tag', name: 'q1' } } });
    for (const interval of ["INTERVAL '7 days'", "'7 days'", '7 DAYS', 'interval 7 day', "'1 week'"]) {
      expect(parseStatement(`ALTER DATASET a.b.c EXPIRE SNAPSHOTS OLDER THAN ${interval}`), interval).toMatchObject({ kind: 'alter_dataset_expire', olderThan: { value: 604_800_000 } });
    }
    expect(parseStatement('ALTER DATASET a.b.c EXPIRE SNAPSHOTS OLDER THAN 3 HOURS RETAIN LAST 5')).toMatchObject({ olderThan: { value: 10_800_000 }, retainLast: { value: 5 } });
    expect(isLakeportText('UNDROP DATASET a.b.c')).toBe(true);
    expect(isLakeportText('ALTER DATASET a.b.c COMPACT')).toBe(true);
  });

  it.each([
    ['DROP DATASET a.b', 'SYNTAX_ERROR', undefined],
    ['DROP DATASET IF a.b.c', 'SYNTAX_ERROR', 'a'],
    ['UNDROP DATASET IF EXISTS a.b.c', 'SYNTAX_ERROR', 'EXISTS'],
    ['ALTER DATASET a.b.c ROLLBACK SNAPSHOT 1', 'SYNTAX_ERROR', 'SNAPSHOT'],
    ['ALTER DATASET a.b.c ROLLBACK TO SNAPSHOT 0', 'SYNTAX_ERROR', '0'],
    ['ALTER DATASET a.b.c ROLLBACK TO TAG current', 'INVALID_NAME', 'current'],
    ['ALTER DATASET a.b.c EXPIRE SNAPSHOTS OLDER THAN', 'INVALID_INTERVAL', undefined],
    ["ALTER DATASET a.b.c EXPIRE SNAPSHOTS OLDER THAN '7 parsecs'", 'INVALID_INTERVAL', "'7 parsecs'"],
    ['ALTER DATASET a.b.c EXPIRE SNAPSHOTS OLDER THAN 7 DAYS RETAIN 3', 'SYNTAX_ERROR', '3'],
    ['ALTER DATASET a.b.c EXPIRE SNAPSHOTS OLDER THAN 7 DAYS extra', 'SYNTAX_ERROR', 'extra'],
  ])('%s → %s', (sql, code, at) => {
    const error = errorOf(sql);
    expect(error.code).toBe(code);
    if (at !== undefined) expect(error.at).toBe(at);
  });
});

describe('ALTER DATASET … COMPACT', () => {
  it.each(['ALTER DATASET sales.orders.daily COMPACT', 'alter dataset "sales".orders."daily" compact;', 'ALTER /* c */ DATASET sales.orders.daily\n  COMPACT -- now'])('%s', (sql) => {
    expect(parseStatement(sql)).toMatchObject({ kind: 'alter_dataset_compact', dataset: { value: { workspace: 'sales', collection: 'orders', dataset: 'daily' } } });
  });

  it.each([
    ['ALTER DATASET sales.orders COMPACT', 'SYNTAX_ERROR', 'COMPACT'],
    ['ALTER DATASET sales.orders.daily.x COMPACT', 'SYNTAX_ERROR', '.'],
    ['ALTER DATASET sales.orders.daily', 'SYNTAX_ERROR', 'daily'],
    ['ALTER DATASET sales.orders.daily SHRINK', 'SYNTAX_ERROR', 'SHRINK'],
    ['ALTER DATASET sales.orders.daily COMPACT FULL', 'SYNTAX_ERROR', 'FULL'],
    ['ALTER DATASET sales.orders.daily COMPACT; SELECT 1', 'MULTIPLE_STATEMENTS', 'SELECT'],
    ['ALTER DATASET sales.orders.bad-name COMPACT', 'SYNTAX_ERROR', '-'],
  ])('%s → %s', (sql, code, at) => {
    expect(errorOf(sql)).toMatchObject({ code, at });
  });
});

describe('fuzzed statements', () => {
  const words = fc.constantFrom(
    'CREATE', 'OR', 'REPLACE', 'SECRET', 'IF', 'NOT', 'EXISTS', 'IN', 'TYPE', 'KEY', 'SCOPE', 'URL', "'http_endpoint'", "'gcs_service_account'", "'x'", ':p', ':', '(', ')', ',', ';',
    'GRANT', 'REVOKE', 'ON', 'TO', 'FROM', 'reader', 'owner', 'ws', '.', '*', 'TAG', 'DROP', 'AT', 'VERSION', '=', '>', '42', 'ALTER', 'WORKSPACE', 'SET', 'deletion_protection', 'TRUE', 'DATASET', 'COMPACT', 'UNDROP', 'ROLLBACK', 'SNAPSHOT', 'EXPIRE', 'SNAPSHOTS', 'OLDER', 'THAN', 'INTERVAL', "'7 days'", 'DAYS', 'RETAIN', 'LAST',
    '"q"', '$$v$$', "E'x'", '--', '/*', '\u0000', '\n', "'", '"', '$1', '?', 'USER', 'SERVICE_ACCOUNT', '2024x.y',
  );
  const statement = fc.oneof(
    fc.array(words, { maxLength: 24 }).map((w) => w.join(' ')),
    fc.array(words, { maxLength: 24 }).map((w) => w.join('')),
    fc.tuple(fc.constantFrom('CREATE SECRET ', 'GRANT ', 'REVOKE ', 'CREATE TAG ', 'DROP TAG ', 'ALTER WORKSPACE ', 'ALTER SECRET ', 'DROP DATASET ', 'UNDROP DATASET ', 'ALTER DATASET a.b.c ', 'ALTER DATASET a.b.c EXPIRE SNAPSHOTS OLDER THAN '), fc.string({ maxLength: 80 })).map(([a, b]) => a + b),
  );

  it('parse or give a StatementError with a place inside the text, never anything else', () => {
    fc.assert(
      fc.property(statement, (sql) => {
        if (!isLakeportText(sql)) return;
        try {
          parseStatement(sql);
        } catch (error) {
          expect(error).toBeInstanceOf(StatementError);
          const { span, message } = error as StatementError;
          expect(message.length).toBeGreaterThan(0);
          if (span) {
            expect(span.start).toBeGreaterThanOrEqual(0);
            expect(span.end).toBeLessThanOrEqual(sql.length);
            expect(span.start).toBeLessThanOrEqual(span.end);
          }
        }
      }),
      { numRuns: 3000 },
    );
  });
});
