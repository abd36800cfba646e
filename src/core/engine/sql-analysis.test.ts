import { DuckDBInstance } from '@duckdb/node-api';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { SqlAnalyzer, type Analysis, type Refusal, type SelectAnalysis } from './sql-analysis.ts';

let analyzer: SqlAnalyzer;
beforeAll(async () => {
  analyzer = await SqlAnalyzer.create();
});
afterAll(async () => {
  await analyzer.close();
});

async function select(sql: string): Promise<SelectAnalysis> {
  const a = await analyzer.analyze(sql);
  if (a.kind !== 'select') throw new Error(`expected a select, got ${JSON.stringify(a)}`);
  return a;
}
async function refused(sql: string): Promise<Refusal> {
  const a = await analyzer.analyze(sql);
  if (a.kind !== 'refused') throw new Error(`expected a refusal, got ${JSON.stringify({ ...a, rewritten: undefined })}`);
  return a;
}
const names = (a: SelectAnalysis) => a.tables.map((t) => t.parts.join('.'));

describe('selects', () => {
  it('reports a dataset with its three parts and position', async () => {
    const sql = 'SELECT a, b FROM sales.eu.orders WHERE a > 1';
    const a = await select(sql);
    expect(a.tables).toEqual([{ catalog: 'sales', schema: 'eu', name: 'orders', parts: ['sales', 'eu', 'orders'], position: sql.indexOf('sales') }]);
    expect(a.tableFunctions).toEqual([]);
    expect(a.scalarFunctions).toEqual([]);
    expect(a.rewritten).toMatchObject({ sql, names: [] });
  });

  it('reports one- and two-part names as written, quotes removed', async () => {
    const a = await select('SELECT * FROM t, s.u, "Ws"."Coll"."Data Set"');
    expect(a.tables.map((t) => [t.catalog, t.schema, t.name])).toEqual([
      [undefined, undefined, 't'],
      [undefined, 's', 'u'],
      ['Ws', 'Coll', 'Data Set'],
    ]);
    expect(a.tables[1].parts).toEqual(['s', 'u']);
  });

  it('accepts FROM-first, TABLE, VALUES and parenthesised queries', async () => {
    expect(names(await select('FROM ws.c.d'))).toEqual(['ws.c.d']);
    expect(names(await select('FROM ws.c.d SELECT x WHERE y'))).toEqual(['ws.c.d']);
    expect(names(await select('TABLE ws.c.d'))).toEqual(['ws.c.d']);
    expect(names(await select('VALUES (1), (2)'))).toEqual([]);
    expect(names(await select('(SELECT * FROM ws.c.d)'))).toEqual(['ws.c.d']);
    expect(names(await select('SELECT 1;'))).toEqual([]);
  });

  it('finds both sides of joins, including USING, ASOF, POSITIONAL and LATERAL', async () => {
    expect(names(await select('SELECT * FROM ws.c.a a JOIN ws.c.b b ON a.id = b.id'))).toEqual(['ws.c.a', 'ws.c.b']);
    expect(names(await select('SELECT * FROM ws.c.a LEFT JOIN ws.c.b USING (id) CROSS JOIN ws.d.e'))).toEqual(['ws.c.a', 'ws.c.b', 'ws.d.e']);
    expect(names(await select('SELECT * FROM ws.c.a a ASOF JOIN ws.c.b b ON a.t >= b.t'))).toEqual(['ws.c.a', 'ws.c.b']);
    expect(names(await select('SELECT * FROM ws.c.a POSITIONAL JOIN ws.c.b'))).toEqual(['ws.c.a', 'ws.c.b']);
    expect(names(await select('SELECT * FROM ws.c.a a, LATERAL (SELECT * FROM ws.c.b b WHERE b.id = a.id)'))).toEqual(['ws.c.a', 'ws.c.b']);
  });

  it('finds tables in subqueries anywhere', async () => {
    const a = await select(`
      SELECT (SELECT max(x) FROM ws.s.scalar) AS m, *
      FROM (SELECT * FROM ws.s.inner_ds) q
      WHERE q.id IN (SELECT id FROM ws.s.in_list)
        AND EXISTS (FROM ws.s.exists_ds)
        AND q.v > ANY (SELECT v FROM ws.s.any_ds)
      GROUP BY ALL
      HAVING count(*) > (SELECT count(*) FROM ws.s.having_ds)
      ORDER BY (SELECT 1 FROM ws.s.order_ds)
      LIMIT (SELECT 10 FROM ws.s.limit_ds)`);
    expect(names(a).sort()).toEqual(
      ['ws.s.scalar', 'ws.s.inner_ds', 'ws.s.in_list', 'ws.s.exists_ds', 'ws.s.any_ds', 'ws.s.having_ds', 'ws.s.order_ds', 'ws.s.limit_ds'].sort(),
    );
    expect(a.scalarFunctions).toEqual(expect.arrayContaining(['max', 'count_star']));
  });

  it('finds every branch of set operations', async () => {
    expect(names(await select('SELECT a FROM ws.c.x UNION SELECT a FROM ws.c.y UNION ALL SELECT a FROM ws.c.z'))).toEqual(['ws.c.x', 'ws.c.y', 'ws.c.z']);
    expect(names(await select('SELECT a FROM ws.c.x INTERSECT SELECT a FROM ws.c.y EXCEPT SELECT a FROM ws.c.z'))).toEqual(['ws.c.x', 'ws.c.y', 'ws.c.z']);
    expect(names(await select('SELECT * FROM ws.c.x UNION BY NAME SELECT * FROM ws.c.y'))).toEqual(['ws.c.x', 'ws.c.y']);
  });

  it('finds the tables of PIVOT and UNPIVOT with listed values', async () => {
    expect(names(await select("PIVOT ws.c.sales ON year IN (2023, 2024) USING sum(amount)"))).toEqual(['ws.c.sales']);
    expect(names(await select("SELECT * FROM (PIVOT ws.c.sales ON year IN ('2024') USING sum(amount))"))).toEqual(['ws.c.sales']);
    expect(names(await select('UNPIVOT ws.c.wide ON a, b INTO NAME k VALUE v'))).toEqual(['ws.c.wide']);
  });

  it('lists functions without operators', async () => {
    const a = await select("SELECT upper(a) || 'x', sum(b) OVER (PARTITION BY c), row_number() OVER (), list_transform(l, lambda x: x + 1), a LIKE 'x%' FROM ws.c.d");
    expect(a.scalarFunctions).toEqual(['upper', 'sum', 'row_number', 'list_transform']);
  });
});

describe('CTEs', () => {
  it('does not report CTE references as tables', async () => {
    const a = await select('WITH recent AS (SELECT * FROM ws.c.orders WHERE d > 1), big AS (SELECT * FROM recent WHERE v > 9) SELECT * FROM big JOIN recent USING (id)');
    expect(names(a)).toEqual(['ws.c.orders']);
  });

  it('matches CTE names regardless of case, like DuckDB', async () => {
    expect(names(await select('WITH Recent AS (SELECT 1) SELECT * FROM RECENT, "recent"'))).toEqual([]);
  });

  it('follows DuckDB scoping: forward references, qualified names and inner CTEs are tables', async () => {
    // a CTE cannot see a later one
    expect(names(await select('WITH a AS (SELECT * FROM b), b AS (SELECT 1) SELECT * FROM a'))).toEqual(['b']);
    // a qualified name is never a CTE
    expect(names(await select('WITH d AS (SELECT 1) SELECT * FROM main.d, ws.c.d'))).toEqual(['main.d', 'ws.c.d']);
    // a CTE inside a subquery is not visible outside it
    expect(names(await select('SELECT * FROM (WITH x AS (SELECT 1) SELECT * FROM x), x'))).toEqual(['x']);
    // a non-recursive CTE cannot see itself
    expect(names(await select('WITH t AS (SELECT * FROM t) SELECT * FROM t'))).toEqual(['t']);
  });

  it('lets a recursive CTE see itself', async () => {
    const a = await select('WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT * FROM r, ws.c.d');
    expect(names(a)).toEqual(['ws.c.d']);
  });

  it('handles MATERIALIZED CTEs and CTEs over set operations', async () => {
    expect(names(await select('WITH m AS MATERIALIZED (SELECT * FROM ws.c.d) SELECT * FROM m UNION SELECT * FROM m'))).toEqual(['ws.c.d']);
  });
});

describe('time travel', () => {
  it('reports AT (VERSION => tag | id) and AT (TIMESTAMP => …)', async () => {
    const a = await select(
      "SELECT * FROM ws.c.a AT (VERSION => 'v1') JOIN ws.c.b AT (VERSION => 42) USING (id) JOIN ws.c.c AT (TIMESTAMP => TIMESTAMP '2024-05-01 12:00:00') USING (id) JOIN ws.c.e AT (TIMESTAMP => '2024-05-02') USING (id)",
    );
    expect(a.tables.map((t) => t.version)).toEqual([
      { kind: 'tag', name: 'v1' },
      { kind: 'id', snapshotId: 42 },
      { kind: 'timestamp', value: '2024-05-01 12:00:00' },
      { kind: 'timestamp', value: '2024-05-02' },
    ]);
  });

  it('keeps big snapshot ids exact and refuses unsafe ones', async () => {
    expect((await select('SELECT * FROM ws.c.d AT (VERSION => 9007199254740991)')).tables[0].version).toEqual({ kind: 'id', snapshotId: 9007199254740991 });
    expect(await refused('SELECT * FROM ws.c.d AT (VERSION => 9007199254740993)')).toMatchObject({ code: 'INVALID_TIME_TRAVEL', position: 14 });
    expect(await refused('SELECT * FROM ws.c.d AT (VERSION => 99999999999999999999999)')).toMatchObject({ code: 'INVALID_TIME_TRAVEL' });
    expect(await refused('SELECT * FROM ws.c.d AT (VERSION => -1)')).toMatchObject({ code: 'INVALID_TIME_TRAVEL' });
  });

  it('refuses versions that are not literals', async () => {
    for (const sql of [
      'SELECT * FROM ws.c.d AT (VERSION => :v)',
      "SELECT * FROM ws.c.d AT (VERSION => 'v' || '1')",
      'SELECT * FROM ws.c.d AT (VERSION => (SELECT 1))',
      'SELECT * FROM ws.c.d AT (TIMESTAMP => now())',
      'SELECT * FROM ws.c.d AT (VERSION => 1.5)',
      'WITH x AS (SELECT 1) SELECT * FROM x AT (VERSION => 1)',
    ]) {
      expect(await refused(sql), sql).toMatchObject({ code: 'INVALID_TIME_TRAVEL', message: expect.stringContaining('AT') });
    }
  });
});

describe('placeholders', () => {
  it('analyses the rewritten text and lists the names', async () => {
    const sql = "SELECT * FROM ws.c.d WHERE region = :region AND day BETWEEN :from AND :to AND note <> ':not_me' AND region <> :Region";
    const a = await select(sql);
    expect(a.rewritten.sql).toBe("SELECT * FROM ws.c.d WHERE region = $region AND day BETWEEN $from AND $to AND note <> ':not_me' AND region <> $Region");
    expect(a.rewritten.names).toEqual(['region', 'from', 'to']);
    expect(a.rewritten.toOriginal(sql.indexOf(':from'))).toBe(sql.indexOf(':from'));
  });

  it('rewrites placeholders in table function arguments and keeps casts', async () => {
    const sql = 'SELECT :n::INT + 1, x[1:2] FROM range(:n) t(x)';
    const a = await select(sql);
    expect(a.rewritten.names).toEqual(['n']);
    expect(a.tableFunctions).toEqual([{ name: 'range', namedArgs: [], position: sql.indexOf('range'), args: [{ value: { kind: 'parameter', name: 'n' } }] }]);
  });

  it("refuses DuckDB's own parameter syntax", async () => {
    expect(await refused('SELECT * FROM ws.c.d WHERE a = $a')).toMatchObject({ code: 'UNSUPPORTED_PARAMETER', position: 31, message: expect.stringContaining('$a') });
    expect(await refused('SELECT * FROM ws.c.d WHERE a = ?')).toMatchObject({ code: 'UNSUPPORTED_PARAMETER', position: 31 });
    expect(await refused('SELECT * FROM ws.c.d WHERE a = $1')).toMatchObject({ code: 'UNSUPPORTED_PARAMETER', position: 31 });
    expect(await refused('SELECT :a, ?')).toMatchObject({ code: 'UNSUPPORTED_PARAMETER', position: 11 });
  });

  it('accepts $name when the same :name is used too (it is one parameter)', async () => {
    expect((await select('SELECT :a, $a')).rewritten.names).toEqual(['a']);
  });
});

describe('one statement', () => {
  it('refuses empty input', async () => {
    for (const sql of ['', '   \n\t', '-- nothing', '/* nothing */', ';', ' ; ; ']) {
      expect(await refused(sql), JSON.stringify(sql)).toMatchObject({ code: 'EMPTY_STATEMENT' });
    }
  });

  it('refuses more than one statement, pointing at the second', async () => {
    expect(await refused('SELECT 1; SELECT 2')).toMatchObject({ code: 'MULTIPLE_STATEMENTS', position: 10 });
    expect(await refused('SELECT 1;\n-- c\nDROP TABLE t')).toMatchObject({ code: 'MULTIPLE_STATEMENTS', position: 15 });
    expect(await refused("SELECT ';' ; SELECT 2")).toMatchObject({ code: 'MULTIPLE_STATEMENTS', position: 13 });
    expect(await refused('GRANT x; SELECT 1')).toMatchObject({ code: 'MULTIPLE_STATEMENTS', position: 9 });
  });

  it('does not split on semicolons in strings, identifiers or comments', async () => {
    expect(names(await select('SELECT \'a;b\', "c;d" FROM ws.c.d -- ; SELECT 2\n/* ; */'))).toEqual(['ws.c.d']);
  });
});

describe('statements that are not queries', () => {
  const cases: [string, string][] = [
    ["COPY ws.c.d TO '/tmp/x.csv'", 'COPY'],
    ["COPY (SELECT 1) TO '/tmp/x.csv'", 'COPY'],
    ["ATTACH '/tmp/x.db' AS x", 'ATTACH'],
    ['DETACH x', 'DETACH'],
    ['INSTALL httpfs', 'INSTALL'],
    ['LOAD httpfs', 'LOAD'],
    ["FORCE INSTALL httpfs", 'FORCE'],
    ['PRAGMA version', 'PRAGMA'],
    ["SET enable_external_access = true", 'SET'],
    ["SET VARIABLE x = 1", 'SET'],
    ['RESET memory_limit', 'RESET'],
    ["EXPORT DATABASE '/tmp/out'", 'EXPORT DATABASE'],
    ["IMPORT DATABASE '/tmp/out'", 'IMPORT DATABASE'],
    ['CREATE TABLE t (a INT)', 'CREATE TABLE'],
    ['CREATE OR REPLACE TEMP VIEW v AS SELECT 1', 'CREATE VIEW'],
    ['CREATE MACRO m(x) AS x', 'CREATE MACRO'],
    ['DROP TABLE t', 'DROP TABLE'],
    ['ALTER TABLE t ADD COLUMN b INT', 'ALTER TABLE'],
    ['INSERT INTO t VALUES (1)', 'INSERT'],
    ['WITH x AS (SELECT 1) INSERT INTO t SELECT * FROM x', 'INSERT'],
    ['UPDATE t SET a = 1', 'UPDATE'],
    ['DELETE FROM t', 'DELETE'],
    ['CALL duckdb_settings()', 'CALL'],
    ['CHECKPOINT', 'CHECKPOINT'],
    ['VACUUM', 'VACUUM'],
    ['BEGIN TRANSACTION', 'BEGIN'],
    ['COMMIT', 'COMMIT'],
    ['USE memory', 'USE'],
    ['EXPLAIN SELECT 1', 'EXPLAIN'],
    ['EXPLAIN ANALYZE SELECT 1', 'EXPLAIN'],
    ['PREPARE p AS SELECT 1', 'PREPARE'],
    ['EXECUTE p', 'EXECUTE'],
  ];
  for (const [sql, keyword] of cases) {
    it(`refuses ${sql}`, async () => {
      const r = await refused(sql);
      expect(r.code).toBe('STATEMENT_NOT_ALLOWED');
      expect(r.message).toContain(`${keyword} is not allowed`);
    });
  }

  it('points at the keyword, after comments', async () => {
    const sql = '/* export */ -- now\n  COPY t TO :path';
    expect(await refused(sql)).toMatchObject({ code: 'STATEMENT_NOT_ALLOWED', position: sql.indexOf('COPY') });
  });

  it('refuses DESCRIBE, SHOW and SUMMARIZE as not queries, even inside a query', async () => {
    for (const [sql, keyword] of [
      ['DESCRIBE ws.c.d', 'DESCRIBE'],
      ['DESCRIBE SELECT 1', 'DESCRIBE'],
      ['SHOW TABLES', 'SHOW'],
      ['SHOW ALL TABLES', 'SHOW'],
      ['SUMMARIZE ws.c.d', 'SUMMARIZE'],
      ['SELECT * FROM (DESCRIBE ws.c.d)', 'DESCRIBE'],
      ['SELECT * FROM (SUMMARIZE ws.c.d)', 'SUMMARIZE'],
    ]) {
      expect(await refused(sql), sql).toMatchObject({ code: 'NOT_A_QUERY', message: expect.stringContaining(keyword) });
    }
  });

  it('explains a PIVOT that reads its values from the data', async () => {
    for (const sql of ['PIVOT ws.c.d ON year USING sum(x)', 'SELECT * FROM (PIVOT ws.c.d ON year USING sum(x))']) {
      expect(await refused(sql), sql).toMatchObject({ code: 'STATEMENT_NOT_ALLOWED', position: sql.indexOf('PIVOT'), message: expect.stringContaining('IN (') });
    }
  });
});

describe("Lakeport's own statements", () => {
  it('are recognised by their leading keywords and not parsed further', async () => {
    const cases: [string, string][] = [
      ["CREATE SECRET s3_main (TYPE s3, KEY_ID 'x', SECRET :secret)", 'create_secret'],
      ['create or replace secret s (whatever)', 'create_secret'],
      ['CREATE PERSISTENT SECRET s (TYPE s3)', 'create_secret'],
      ['GRANT reader ON ws.c TO alice', 'grant'],
      ['-- why\nrevoke writer ON ws FROM bob;', 'revoke'],
      ['ALTER WORKSPACE sales SET deletion_protection = true', 'alter_workspace'],
      ['alter dataset sales.orders.daily compact', 'alter_dataset'],
      ['GRANT this is not even valid', 'grant'],
      ['CREATE OR REPLACE VIEW ws.c.v AS SELECT 1', 'create_view'],
      ['DROP VIEW IF EXISTS ws.c.v', 'drop_view'],
      ["COMMENT ON COLUMN ws.c.d.x IS 'y'", 'comment'],
      ['ALTER DATASET ws.c.d SET SORTED BY (x)', 'alter_dataset'],
      ['CREATE MATERIALIZED VIEW a.b.c AS SELECT 1', 'create_materialized_view'],
      ['create or replace materialized view a.b.c refresh on commit as select 1', 'create_materialized_view'],
      ['REFRESH MATERIALIZED VIEW a.b.c', 'refresh_materialized_view'],
      ['DROP MATERIALIZED VIEW IF EXISTS a.b.c', 'drop_materialized_view'],
    ];
    for (const [sql, statement] of cases) {
      const a = await analyzer.analyze(sql);
      expect(a, sql).toMatchObject({ kind: 'lakeport', statement });
    }
    const a = (await analyzer.analyze(cases[0][0])) as Extract<Analysis, { kind: 'lakeport' }>;
    expect(a.rewritten.names).toEqual(['secret']);
  });

  it('are not confused with DuckDB statements that share a first word', async () => {
    expect(await refused('CREATE TABLE secret (a INT)')).toMatchObject({ code: 'STATEMENT_NOT_ALLOWED' });
    expect(await refused('CREATE TEMP VIEW v AS SELECT 1')).toMatchObject({ code: 'STATEMENT_NOT_ALLOWED' });
    expect(await refused('ALTER TABLE workspace ADD COLUMN b INT')).toMatchObject({ code: 'STATEMENT_NOT_ALLOWED' });
    expect(names(await select('SELECT grant FROM ws.c.revoke'))).toEqual(['ws.c.revoke']);
  });
});

describe('table functions and files', () => {
  it('reports table functions with their named arguments', async () => {
    const a = await select(
      "SELECT * FROM read_parquet('s3://b/x.parquet', credentials => 'mine', hive_partitioning = true) p JOIN read_csv('f.csv', sep := ';', header = false, columns = {'a': 'INT'}) c ON true, glob('*'), duckdb_settings()",
    );
    expect(a.tableFunctions.map((f) => [f.name, f.namedArgs])).toEqual([
      ['read_parquet', ['credentials', 'hive_partitioning']],
      ['read_csv', ['sep', 'header', 'columns']],
      ['glob', []],
      ['duckdb_settings', []],
    ]);
    expect(a.tableFunctions[0].position).toBe(14);
    expect(a.scalarFunctions).toEqual(['struct_pack']); // the {…} literal
  });

  it('describes literal arguments with where they are written', async () => {
    const sql =
      "FROM read_csv(['s3://b/a.csv', 's3://b/b.csv'], header = true, delim := ';', skip => -2, columns = {'a': 'INT', 'b': 'VARCHAR'}, quote => NULL, credentials => 'ws.s', x => 1 + 1, y => :p, z = 't'::BOOLEAN)";
    const a = await select(sql);
    expect(a.tableFunctions[0].args).toEqual([
      {
        value: { kind: 'list', items: [{ kind: 'string', value: 's3://b/a.csv' }, { kind: 'string', value: 's3://b/b.csv' }] },
        position: sql.indexOf("'s3://b/a"),
        itemPositions: [sql.indexOf("'s3://b/a"), sql.indexOf("'s3://b/b")],
      },
      { name: 'header', value: { kind: 'boolean', value: true }, position: sql.indexOf('true') },
      { name: 'delim', value: { kind: 'string', value: ';' }, position: sql.indexOf("';'") },
      { name: 'skip', value: { kind: 'number', value: -2 }, position: expect.any(Number) },
      {
        name: 'columns',
        value: { kind: 'struct', fields: [{ name: 'a', value: { kind: 'string', value: 'INT' } }, { name: 'b', value: { kind: 'string', value: 'VARCHAR' } }] },
        position: expect.any(Number),
      },
      { name: 'quote', value: { kind: 'null' }, position: sql.indexOf('NULL') },
      { name: 'credentials', value: { kind: 'string', value: 'ws.s' }, position: sql.indexOf("'ws.s'") },
      { name: 'x', value: { kind: 'expression' }, position: expect.any(Number) },
      { name: 'y', value: { kind: 'parameter', name: 'p' } },
      { name: 'z', value: { kind: 'boolean', value: true }, position: sql.indexOf("'t'") },
    ]);
  });

  it('finds table functions in subqueries and function arguments', async () => {
    const a = await select("SELECT (SELECT count(*) FROM read_text('/etc/passwd')) FROM range((SELECT max(n) FROM query('SELECT 1')))");
    expect(a.tableFunctions.map((f) => f.name).sort()).toEqual(['query', 'range', 'read_text']);
  });

  it('reports scalar calls that read files, qualified or not', async () => {
    const a = await select("SELECT read_text('/etc/passwd'), main.read_blob('x'), system.main.glob('y'), getenv('HOME'), current_setting('threads')");
    expect(a.scalarFunctions).toEqual(['read_text', 'read_blob', 'glob', 'getenv', 'current_setting']);
  });

  it('refuses files named in FROM', async () => {
    for (const sql of [
      "SELECT * FROM '/etc/passwd'",
      "SELECT * FROM 'x.parquet'",
      "FROM 'data/*.csv'",
      'SELECT * FROM "x.parquet"',
      'SELECT * FROM data.parquet',
      "SELECT * FROM 's3://bucket/key.parquet'",
      'SELECT * FROM ws.c."../x"',
      'SELECT * FROM ws.c.d JOIN (SELECT * FROM \'~/.ssh/id_rsa\') USING (a)',
      "SELECT * FROM E'x.csv'",
      'SELECT * FROM $$/etc/passwd$$',
    ]) {
      expect(await refused(sql), sql).toMatchObject({ code: 'FILE_ACCESS_NOT_ALLOWED' });
    }
    expect(await refused("SELECT 1 FROM ws.c.d, 'x.parquet'")).toMatchObject({ position: 22 });
  });
});

describe('syntax errors', () => {
  it("carry DuckDB's message and a position in the user's text", async () => {
    const sql = 'SELECT a FROM ws.c.d WHERE';
    expect(await refused(sql)).toMatchObject({ code: 'SYNTAX_ERROR', message: expect.stringContaining('syntax error'), position: sql.length });
    const r = await refused('SELEC 1');
    expect(r).toMatchObject({ code: 'SYNTAX_ERROR', position: 0 });
  });

  it('point at the right place after placeholders and non-ASCII text', async () => {
    const sql = "SELECT 'é😀' || :name, :other 2 FROM ws.c.d";
    expect(await refused(sql)).toMatchObject({ code: 'SYNTAX_ERROR', position: sql.indexOf('2') });
    const sql2 = "SELECT :a, '😀😀'\nFROM ws.c.d\nWHERE x = :b AND AND";
    expect(await refused(sql2)).toMatchObject({ code: 'SYNTAX_ERROR', position: sql2.lastIndexOf('AND') });
  });

  it('refuses unterminated strings and comments, NULs, and unusable placeholders', async () => {
    expect(await refused("SELECT 'oops")).toMatchObject({ code: 'SYNTAX_ERROR', position: 7 });
    expect(await refused('SELECT 1 /* oops')).toMatchObject({ code: 'SYNTAX_ERROR' });
    expect(await refused('SELECT 1\u0000; DROP TABLE x')).toMatchObject({ code: 'SYNTAX_ERROR', position: 8 });
    expect(await refused('SELECT :név')).toMatchObject({ code: 'SYNTAX_ERROR', position: 7 });
  });
});

describe('the analyzer', () => {
  it('serialises concurrent calls', async () => {
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) => analyzer.analyze(`SELECT * FROM ws.c.d${i} WHERE x = :p${i}`)));
    results.forEach((r, i) => {
      expect(r).toMatchObject({ kind: 'select', tables: [{ name: `d${i}` }], rewritten: { names: [`p${i}`] } });
    });
  });

  it('can use a DuckDB instance it is given, and leaves it open', async () => {
    const instance = await DuckDBInstance.create(':memory:');
    const given = new SqlAnalyzer(instance);
    expect(await given.analyze('SELECT 1 FROM ws.c.d')).toMatchObject({ kind: 'select' });
    await given.close();
    await expect(given.analyze('SELECT 1')).rejects.toThrow(/closed/);
    const c = await instance.connect();
    expect((await c.runAndReadAll('SELECT 42')).getRows()).toEqual([[42]]);
    c.closeSync();
    instance.closeSync();
  });

  it('parses only: nothing named in the SQL is run', async () => {
    const a = await select("SELECT * FROM read_text('/definitely/not/here') WHERE getenv('X') IS NULL");
    expect(a.tableFunctions.map((f) => f.name)).toEqual(['read_text']);
  });
});

describe('fuzzing', () => {
  const piece = fc.oneof(
    fc.constantFrom(
      'SELECT', 'FROM', 'WHERE', 'WITH', 'AS', 'JOIN', 'ON', 'UNION', 'COPY', 'CREATE', 'SECRET', 'GRANT', 'ALTER', 'WORKSPACE', 'DESCRIBE', 'PIVOT', 'AT',
      '(VERSION => 1)', "(VERSION => 'v')", 'ws.c.d', "'x.parquet'", 'read_parquet(', 'x', '*', '1', ',', '(', ')', '[', ']', ';', "'", '"', '$$', '--', '/*', '*/',
      '\n', ' ', ':a', ':b', '::', '$1', '?', 'é', '😀', 'lambda', '{', '}', '=', '\u0000',
    ),
    fc.string({ maxLength: 4 }),
  );
  const sqlish = fc.array(piece, { maxLength: 30 }).map((p) => p.join(' '));

  it('never throws or hangs on arbitrary text', async () => {
    const started = Date.now();
    await fc.assert(
      fc.asyncProperty(fc.oneof(sqlish, fc.string({ maxLength: 120 }), fc.string({ maxLength: 60, unit: 'binary' })), async (sql) => {
        const a = await analyzer.analyze(sql);
        expect(['select', 'lakeport', 'refused']).toContain(a.kind);
        if (a.kind === 'refused') {
          expect(a.message.length).toBeGreaterThan(0);
          if (a.position !== undefined) {
            expect(a.position).toBeGreaterThanOrEqual(0);
            expect(a.position).toBeLessThanOrEqual(sql.length);
          }
        } else {
          expect(a.rewritten.sql.length).toBe(sql.length);
        }
        if (a.kind === 'select') {
          for (const t of a.tables) expect(t.parts.length).toBeGreaterThan(0);
        }
      }),
      { numRuns: 600 },
    );
    expect(Date.now() - started).toBeLessThan(25_000);
  });

  it('agrees with DuckDB on where placeholders are', async () => {
    // Any select that analyses has exactly its placeholders as DuckDB parameters (checked inside analyze);
    // here the text mixes placeholders with strings, comments, casts and slices.
    const operand = fc.constantFrom("':a'", ':a', ':b::INT', 'l[1:2][1]', 'l[:2][1]', '"x:y"', "E'\\':a'", '$$:a$$', '[:a, :b][1]', "{'k': :a}.k", 'l[1: :b][1]');
    const gap = fc.constantFrom(' + ', ' /* :a */ + ', ' + -- :a\n', '+', ' || ');
    let selects = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(operand, gap), { minLength: 1, maxLength: 6 }), async (parts) => {
        const sql = `SELECT 1 + ${parts.map(([o, g]) => o + g).join('')} 1 FROM ws.c.d`;
        const a = await analyzer.analyze(sql);
        if (a.kind === 'refused') expect(a.code, `${sql}: ${a.message}`).toBe('SYNTAX_ERROR');
        else selects++;
      }),
      { numRuns: 300 },
    );
    expect(selects).toBeGreaterThan(250);
  });
});

describe('recent analyses', () => {
  it('answers the same text with the same analysis until the analyzer is closed', async () => {
    const own = await SqlAnalyzer.create();
    const first = await own.analyze('SELECT :n AS n');
    expect(await own.analyze('SELECT :n AS n')).toBe(first);
    expect(await own.analyze('SELECT :m AS n')).toMatchObject({ kind: 'select', rewritten: { names: ['m'] } });
    expect(await own.analyze('SELECT 1; SELECT 2')).toBe(await own.analyze('SELECT 1; SELECT 2'));
    await own.close();
    await expect(own.analyze('SELECT :n AS n')).rejects.toThrow(/closed/);
  });

  it('warms: an analysis started ahead is the one a later analyze gets; a text too long to keep is left alone', async () => {
    const own = await SqlAnalyzer.create();
    const runs = vi.spyOn(own as unknown as { analyzeNow(sql: string): Promise<Analysis> }, 'analyzeNow');
    own.warm('SELECT 41 AS n');
    expect(runs).toHaveBeenCalledTimes(1);
    expect(await own.analyze('SELECT 41 AS n')).toMatchObject({ kind: 'select' });
    expect(runs).toHaveBeenCalledTimes(1);
    own.warm(`SELECT 1 -- ${'x'.repeat(70 * 1024)}`);
    expect(runs).toHaveBeenCalledTimes(1);
    await own.close();
    own.warm('SELECT 42');
    expect(runs).toHaveBeenCalledTimes(1);
  });

  it('parses long texts on a lane of their own: a flood of them does not hold up a short statement', async () => {
    const own = await SqlAnalyzer.create();
    // ~0.2 s each to parse on a quiet machine; four of them take ~0.8 s in a row.
    const long = (i: number) => `SELECT 1 WHERE 1 IN (${Array(150_000).fill(String(i)).join(',')})`;
    let longDone = 0;
    const flood = Array.from({ length: 4 }, (_, i) => own.analyze(long(i)).then(() => longDone++));
    expect(await own.analyze('SELECT 7 AS seven')).toMatchObject({ kind: 'select' });
    // Answered before the flood is through: not queued behind it.
    expect(longDone).toBeLessThan(4);
    await Promise.all(flood);
    await own.close();
  }, 90_000);
});
