import { IDENTITY_REGEX } from '../../../core/http/index.ts';
import { parsePattern, ROLES, isRole, PATTERN_HINT, type Pattern, type Role } from '../../../core/authz/index.ts';
import { NAME_REGEX, TAG_NAME_REGEX } from '../../../core/catalog/index.ts';
import { tokenizeSql, type SqlToken } from '../../../core/engine/index.ts';
import type { JobsErrorCode } from '../errors.ts';
import { statementError, type Span } from './errors.ts';
import { readInterval } from './interval.ts';

/**
 * Lakeport's own statements (docs/sql.md, docs/secrets.md): a tokenizer shared with the query path
 * (`tokenizeSql`: the same quoting and comment rules) and a small recursive-descent parser. DuckDB's
 * parser knows none of these. Every node keeps its span in the user's text, so errors point at it.
 *
 *   CREATE [OR REPLACE] SECRET [IF NOT EXISTS] <name> IN <workspace> (TYPE '<type>', <KEY> {:param | '<literal>'} [, …])
 *   GRANT <role> ON <pattern> TO [USER | SERVICE_ACCOUNT] <principal>
 *   REVOKE <role> ON <pattern> FROM [USER | SERVICE_ACCOUNT] <principal>
 *   CREATE TAG <tag> ON <ws>.<coll>.<ds> [AT (VERSION => <snapshot_id> | '<tag>')]
 *   DROP TAG [IF EXISTS] <tag> ON <ws>.<coll>.<ds>
 *   ALTER WORKSPACE <name> SET {deletion_protection | drop_protection | history_protection} {TO | =} {ON | OFF | TRUE | FALSE}
 *   CREATE [OR REPLACE] VIEW <ws>.<coll>.<name> [COMMENT [=] '<text>'] AS <select>   (docs/views.md)
 *   DROP VIEW [IF EXISTS] <ws>.<coll>.<name>
 *   COMMENT ON {DATASET | VIEW | MATERIALIZED VIEW} <ws>.<coll>.<ds> IS {'<text>' | NULL} [BY MODEL]
 *   COMMENT ON COLUMN <ws>.<coll>.<ds>.<column> IS {'<text>' | NULL} [BY MODEL]
 *   ALTER DATASET <ws>.<coll>.<ds> {SET SORTED BY (<column> [ASC | DESC], …) | UNSET SORTED BY}
 *   DROP DATASET [IF EXISTS] <ws>.<coll>.<ds>               (docs/lifecycle.md)
 *   UNDROP DATASET <ws>.<coll>.<ds>
 *   ALTER DATASET <ws>.<coll>.<ds> ROLLBACK TO {SNAPSHOT <id> | TAG <tag>}
 *   ALTER DATASET <ws>.<coll>.<ds> EXPIRE SNAPSHOTS OLDER THAN <interval> [RETAIN LAST <n>]
 *   CREATE [OR REPLACE] MATERIALIZED VIEW <ws>.<coll>.<name> [COMMENT '…'] [REFRESH EVERY <interval> | REFRESH ON COMMIT | REFRESH MANUAL] AS <select>
 *   REFRESH MATERIALIZED VIEW <ws>.<coll>.<name>         (docs/materialized-views.md)
 *   DROP MATERIALIZED VIEW [IF EXISTS] <ws>.<coll>.<name>
 *   ALTER DATASET <ws>.<coll>.<ds> COMPACT                    (docs/compaction.md)
 *
 * Keywords are case-insensitive. Names are bare words or "quoted identifiers" and are lowercased
 * either way (Lakeport's names are); a principal keeps the case of a quoted identifier or a
 * 'string', and a bare one is lowercased as SQL folds identifiers. One trailing `;` is allowed.
 */

export interface Located<T> extends Span {
  value: T;
}

export type OptionValue = ({ kind: 'literal'; text: string } | { kind: 'parameter'; name: string }) & Span;

export interface SecretOption {
  /** The key, upper-cased (`KEY`, `SCOPE`, …). */
  key: Located<string>;
  value: OptionValue;
}

export interface CreateSecret {
  kind: 'create_secret';
  orReplace: boolean;
  ifNotExists: boolean;
  name: Located<string>;
  workspace: Located<string>;
  /** TYPE as written (lowercased); its meaning is checked against the type table later. */
  type: Located<string>;
  /** Every option but TYPE, in the order written. */
  options: SecretOption[];
  span: Span;
}

export interface PrincipalRef {
  identity: string;
  type: 'user' | 'service_account';
}

export interface GrantStatement {
  kind: 'grant' | 'revoke';
  role: Located<Role>;
  pattern: Located<Pattern>;
  principal: Located<PrincipalRef>;
  span: Span;
}

export interface DatasetName {
  workspace: string;
  collection: string;
  dataset: string;
}

export type TagVersion = { kind: 'id'; snapshotId: number } | { kind: 'tag'; name: string };

export interface CreateTag {
  kind: 'create_tag';
  name: Located<string>;
  dataset: Located<DatasetName>;
  version?: Located<TagVersion>;
  span: Span;
}

export interface DropTag {
  kind: 'drop_tag';
  ifExists: boolean;
  name: Located<string>;
  dataset: Located<DatasetName>;
  span: Span;
}

/** The workspace properties ALTER WORKSPACE … SET changes: the lock and the two guards. */
export const WORKSPACE_PROPERTIES = ['deletion_protection', 'drop_protection', 'history_protection'] as const;
export type WorkspaceProperty = (typeof WORKSPACE_PROPERTIES)[number];

export interface AlterWorkspace {
  kind: 'alter_workspace';
  workspace: Located<string>;
  property: Located<WorkspaceProperty>;
  value: Located<boolean>;
  span: Span;
}

export interface CreateView {
  kind: 'create_view';
  orReplace: boolean;
  name: Located<DatasetName>;
  comment?: Located<string>;
  /** The SELECT as the user wrote it: from after AS to the end, without a trailing `;`; `start` is where it begins in the statement. */
  query: Located<string>;
  span: Span;
}

export interface DropView {
  kind: 'drop_view';
  ifExists: boolean;
  name: Located<DatasetName>;
  span: Span;
}

/** What COMMENT ON names: the keyword as written decides which kinds of dataset it accepts. */
export type CommentTarget = 'dataset' | 'view' | 'materialized_view' | 'column';

export interface CommentOn {
  kind: 'comment';
  target: Located<CommentTarget>;
  dataset: Located<DatasetName>;
  /** For COMMENT ON COLUMN: the column as written (matched without case). */
  column?: Located<string>;
  /** The description; null (IS NULL) removes it. */
  text: Located<string | null>;
  /** `BY MODEL`: a language model wrote it (properties.llm_described = true); without it, false. */
  byModel: boolean;
  span: Span;
}

export interface SortKeySpec {
  column: string;
  direction: 'asc' | 'desc';
}

export interface AlterDatasetSort {
  kind: 'alter_dataset_sort';
  dataset: Located<DatasetName>;
  /** The declared order; null for UNSET SORTED BY. */
  keys: Located<SortKeySpec>[] | null;
  span: Span;
}

export interface DropDataset {
  kind: 'drop_dataset';
  ifExists: boolean;
  dataset: Located<DatasetName>;
  span: Span;
}

export interface UndropDataset {
  kind: 'undrop_dataset';
  dataset: Located<DatasetName>;
  span: Span;
}

export interface AlterDatasetRollback {
  kind: 'alter_dataset_rollback';
  dataset: Located<DatasetName>;
  target: Located<TagVersion>;
  span: Span;
}

export interface AlterDatasetExpire {
  kind: 'alter_dataset_expire';
  dataset: Located<DatasetName>;
  /** OLDER THAN, in milliseconds. */
  olderThan: Located<number>;
  retainLast?: Located<number>;
  span: Span;
}

/** How a materialized view is refreshed (docs/materialized-views.md); MANUAL when the statement says nothing. */
export type RefreshPolicy = { mode: 'manual' } | { mode: 'on_commit' } | { mode: 'every'; everyMs: number };

export interface CreateMaterializedView {
  kind: 'create_materialized_view';
  orReplace: boolean;
  name: Located<DatasetName>;
  comment?: Located<string>;
  refresh: Located<RefreshPolicy> | undefined;
  /** The SELECT after AS, exactly as written, and where it starts in the statement. */
  select: Located<string>;
  span: Span;
}

export interface RefreshMaterializedView {
  kind: 'refresh_materialized_view';
  name: Located<DatasetName>;
  span: Span;
}

export interface DropMaterializedView {
  kind: 'drop_materialized_view';
  ifExists: boolean;
  name: Located<DatasetName>;
  span: Span;
}

/** ALTER DATASET … COMPACT (docs/compaction.md): rewrite the small files of the current snapshot. */
export interface AlterDatasetCompact {
  kind: 'alter_dataset_compact';
  dataset: Located<DatasetName>;
  /** The COMPACT keyword. */
  action: Span;
  span: Span;
}

export type LakeportStatement =
  | CreateSecret
  | GrantStatement
  | CreateTag
  | DropTag
  | AlterWorkspace
  | CreateView
  | DropView
  | CommentOn
  | AlterDatasetSort
  | DropDataset
  | UndropDataset
  | AlterDatasetRollback
  | AlterDatasetExpire
  | CreateMaterializedView
  | RefreshMaterializedView
  | DropMaterializedView
  | AlterDatasetCompact;
/** `alter_dataset` is the shared head of ALTER DATASET …, whose action decides the statement. */
export type StatementKind = Exclude<LakeportStatement['kind'], 'alter_dataset_sort' | 'alter_dataset_rollback' | 'alter_dataset_expire' | 'alter_dataset_compact'> | 'alter_secret' | 'alter_dataset';

/** Secret names: letters, digits and underscores, not starting with a digit. */
export const SECRET_NAME_REGEX = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/** Words that may sit between CREATE and SECRET in DuckDB's syntax. */
const SECRET_MODIFIERS = new Set(['TEMP', 'TEMPORARY', 'PERSISTENT']);

const upper = (t: SqlToken | undefined): string | undefined => (t && t.kind === 'word' ? t.text.toUpperCase() : undefined);

/** Which Lakeport statement starts at token `i`, if any (by its leading keywords only). */
function kindAt(tokens: SqlToken[], i: number): StatementKind | undefined {
  const w = (k: number) => upper(tokens[i + k]);
  switch (w(0)) {
    case 'GRANT':
      return 'grant';
    case 'REVOKE':
      return 'revoke';
    case 'ALTER':
      if (w(1) === 'WORKSPACE') return 'alter_workspace';
      if (w(1) === 'DATASET') return 'alter_dataset';
      if (w(1) === 'SECRET' || (SECRET_MODIFIERS.has(w(1) ?? '') && w(2) === 'SECRET')) return 'alter_secret';
      return undefined;
    case 'DROP':
      if (w(1) === 'MATERIALIZED' && w(2) === 'VIEW') return 'drop_materialized_view';
      if (w(1) === 'TAG') return 'drop_tag';
      if (w(1) === 'VIEW') return 'drop_view';
      if (w(1) === 'DATASET') return 'drop_dataset';
      return undefined;
    case 'COMMENT':
      return w(1) === 'ON' ? 'comment' : undefined;
    case 'REFRESH':
      return w(1) === 'MATERIALIZED' && w(2) === 'VIEW' ? 'refresh_materialized_view' : undefined;
    case 'UNDROP':
      return w(1) === 'DATASET' ? 'undrop_dataset' : undefined;
    case 'CREATE': {
      let k = 1;
      if (w(k) === 'OR' && w(k + 1) === 'REPLACE') k += 2;
      // CREATE [OR REPLACE] VIEW (not TEMP VIEW: that is DuckDB's, refused as not a query).
      if (w(k) === 'VIEW') return 'create_view';
      if (w(k) === 'MATERIALIZED' && w(k + 1) === 'VIEW') return 'create_materialized_view';
      if (SECRET_MODIFIERS.has(w(k) ?? '')) k++;
      if (w(k) === 'SECRET') return 'create_secret';
      if (w(k) === 'TAG') return 'create_tag';
      return undefined;
    }
    default:
      return undefined;
  }
}

/** Statements of a token list, split at top-level `;`, each with the index of its first token. */
function statementStarts(tokens: SqlToken[]): number[] {
  const starts: number[] = [];
  let begin = true;
  tokens.forEach((t, i) => {
    if (t.kind === 'operator' && t.text === ';') begin = true;
    else if (begin) {
      starts.push(i);
      begin = false;
    }
  });
  return starts;
}

/**
 * Unicode blanks (no-break, em and ideographic spaces, line separators, …), zero-width spaces and
 * the byte-order mark. DuckDB's lexer reads them as letters of a word; Lakeport's statements read
 * them as spaces, so `CREATE<NBSP>SECRET` is a CREATE SECRET. Each is one UTF-16 unit: offsets stay.
 */
const UNICODE_BLANKS = /[\u0085\u00A0\u1680\u180E\u2000-\u200B\u2028\u2029\u202F\u205F\u2060\u3000\uFEFF]/g;

/** The shared lexer's tokens, with Unicode blanks read as spaces (token texts are still the user's). */
function lakeportTokens(sql: string): SqlToken[] {
  const blanked = sql.replace(UNICODE_BLANKS, ' ');
  const tokens = tokenizeSql(blanked);
  return blanked === sql ? tokens : tokens.map((t) => ({ ...t, text: sql.slice(t.start, t.end) }));
}

/**
 * Whether the text belongs to the Lakeport statement path: one of its statements starts like a
 * Lakeport statement, CREATE/ALTER … SECRET appears anywhere (so a secret literal written after
 * some other statement still never reaches the job table), or it looks like a mistyped secret
 * statement (`secretLookalike`), which the parser then refuses.
 */
export function isLakeportText(sql: string): boolean {
  const tokens = lakeportTokens(sql);
  if (statementStarts(tokens).some((i) => kindAt(tokens, i) !== undefined)) return true;
  if (tokens.some((t, i) => t.kind === 'word' && ['CREATE', 'ALTER'].includes(t.text.toUpperCase()) && ['create_secret', 'alter_secret'].includes(kindAt(tokens, i) ?? ''))) return true;
  return secretLookalike(tokens) !== undefined;
}

// ── secret look-alikes ──

/** Optimal-string-alignment edit distance (insertions, deletions, substitutions, transpositions). */
function editDistance(target: string, text: string): number {
  let before: number[] = [];
  let prev = Array.from({ length: text.length + 1 }, (_, j) => j);
  for (let i = 1; i <= target.length; i++) {
    const row = [i];
    for (let j = 1; j <= text.length; j++) {
      const cost = target[i - 1] === text[j - 1] ? 0 : 1;
      row[j] = Math.min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + cost);
      if (i > 1 && j > 1 && target[i - 1] === text[j - 2] && target[i - 2] === text[j - 1]) row[j] = Math.min(row[j], before[j - 2] + 1);
    }
    before = prev;
    prev = row;
  }
  return prev[text.length];
}

/** How a secret statement starts, letters only: the leading words of a statement are compared with these. */
const SECRET_HEADS = ['CREATESECRET', 'CREATEORREPLACESECRET', 'CREATETEMPSECRET', 'CREATETEMPORARYSECRET', 'CREATEPERSISTENTSECRET', 'ALTERSECRET'];

/** Option keys of secrets (Lakeport's and DuckDB's): one followed by a value marks a secret's option list. */
const SECRET_OPTION_KEYS = new Set([
  'TYPE', 'KEY', 'KEY_ID', 'SECRET', 'TOKEN', 'PASSWORD', 'SCOPE', 'URL', 'REGION', 'ENDPOINT', 'PROVIDER',
  'ACCESS_KEY_ID', 'SECRET_ACCESS_KEY', 'SESSION_TOKEN', 'BEARER_TOKEN', 'CLIENT_ID', 'CLIENT_SECRET', 'TENANT_ID',
  'ACCOUNT_NAME', 'CONNECTION_STRING', 'HEADER_AUTHORIZATION', 'HEADER_X_API_KEY', 'HEADER_X_AUTH_TOKEN',
]);

/** Secret types (Lakeport's, their aliases, DuckDB's): `TYPE '<one of these>'` is never part of a query. */
const SECRET_TYPE_NAMES = new Set([
  'gcs_service_account', 's3_access_key', 'http_endpoint', 'storage_a_service_account', 'storage_b_access_key',
  's3', 'gcs', 'r2', 'azure', 'http', 'huggingface', 'mysql', 'postgres', 'iceberg', 'uc', 'ducklake',
]);

const letters = (t: SqlToken) => t.text.toUpperCase().replace(/[^A-Z]/g, '');

/**
 * Where a text looks like a secret statement that is not written as one (a typo such as
 * `CRATE SECRET` or `CREATE SECRETS`, a keyword broken by an invisible character, a secret's option
 * list after some other word): such a text is refused, never run as a query, whose job row would keep
 * its text and parameters. Undefined for texts that do not: the span is what to point at.
 *
 * - A statement whose leading words, letters only, are within two edits of `CREATE SECRET` (or of
 *   `CREATE OR REPLACE SECRET`, `ALTER SECRET`, …);
 * - a word within two edits of SECRET together with a secret option and its value (`KEY_ID '…'`,
 *   `TOKEN :p`);
 * - `TYPE '<a secret type>'` anywhere.
 */
export function secretLookalike(tokens: SqlToken[]): Span | undefined {
  for (const start of statementStarts(tokens)) {
    // The statement's leading words and, per word, how many letters it ends at.
    let skeleton = '';
    const ends: number[] = [];
    for (let k = start; k < tokens.length && tokens[k].kind === 'word' && skeleton.length < 30; k++) {
      skeleton += letters(tokens[k]);
      ends.push(skeleton.length);
    }
    for (const head of SECRET_HEADS) {
      // The shortest prefix of the skeleton nearest to the head, if near enough; the span is its words.
      let best: { distance: number; length: number } | undefined;
      for (let length = 1; length <= Math.min(skeleton.length, head.length + 2); length++) {
        const distance = editDistance(head, skeleton.slice(0, length));
        if (distance <= 2 && (!best || distance < best.distance)) best = { distance, length };
      }
      if (best) return { start: tokens[start].start, end: tokens[start + ends.findIndex((end) => end >= best.length)].end };
    }
  }
  const valued = (k: number) => ['string', 'placeholder'].includes(tokens[k + 1]?.kind ?? '') || (tokens[k + 1]?.text === ':' && tokens[k + 2]?.kind === 'word');
  const type = tokens.findIndex((t, k) => upper(t) === 'TYPE' && tokens[k + 1]?.kind === 'string' && SECRET_TYPE_NAMES.has(tokens[k + 1].text.replace(/^'|'$/g, '').toLowerCase()));
  if (type >= 0) return { start: tokens[type].start, end: tokens[type].end };
  const secret = tokens.find((t) => t.kind === 'word' && letters(t).length >= 4 && editDistance('SECRET', letters(t)) <= 2);
  if (secret && tokens.some((t, k) => SECRET_OPTION_KEYS.has(upper(t) ?? '') && valued(k))) return { start: secret.start, end: secret.end };
  return undefined;
}

/**
 * The shared lexer reads `.2024` and `2024ws.orders.` as numbers (DuckDB's decimals). These statements
 * have no decimals, only names that may start with a digit, so such a token is split at its dots.
 */
function splitDottedNumbers(tokens: SqlToken[]): SqlToken[] {
  const out: SqlToken[] = [];
  for (const t of tokens) {
    if (t.kind !== 'number' || !t.text.includes('.')) {
      out.push(t);
      continue;
    }
    let at = t.start;
    for (const piece of t.text.split(/(\.)/)) {
      if (piece === '') continue;
      const kind = piece === '.' ? 'operator' : /^[0-9]/.test(piece) ? 'number' : 'word';
      out.push({ kind, start: at, end: at + piece.length, text: piece });
      at += piece.length;
    }
  }
  return out;
}

/** Parses the one Lakeport statement of `sql`; throws a positioned StatementError otherwise. */
export function parseStatement(sql: string): LakeportStatement {
  return new Parser(sql).statement();
}

class Parser {
  private readonly tokens: SqlToken[];
  private i = 0;
  /** Inside CREATE SECRET, tokens are described by kind only: a misplaced secret is never echoed. */
  private guarded = false;

  constructor(private readonly sql: string) {
    this.tokens = splitDottedNumbers(lakeportTokens(sql));
  }

  // ── tokens ──

  private peek(offset = 0): SqlToken | undefined {
    return this.tokens[this.i + offset];
  }

  private next(): SqlToken | undefined {
    return this.tokens[this.i++];
  }

  private isWord(word: string, offset = 0): boolean {
    return upper(this.peek(offset)) === word;
  }

  private acceptWord(word: string): SqlToken | undefined {
    if (!this.isWord(word)) return undefined;
    return this.next();
  }

  private isOperator(text: string, offset = 0): boolean {
    const t = this.peek(offset);
    return t !== undefined && t.kind === 'operator' && t.text === text;
  }

  private acceptOperator(text: string): SqlToken | undefined {
    return this.isOperator(text) ? this.next() : undefined;
  }

  /** The span of the current token, or at the end of the text the last one. */
  private here(): Span {
    const t = this.peek();
    if (t) return { start: t.start, end: t.end };
    const last = this.tokens[this.tokens.length - 1];
    return last ? { start: last.start, end: last.end } : { start: 0, end: this.sql.length };
  }

  private describe(t: SqlToken | undefined): string {
    if (!t) return 'the end of the statement';
    if (t.kind === 'string') return 'a string';
    if (t.kind === 'placeholder') return `the parameter ${t.text}`;
    if (t.kind === 'operator') return t.text === "'" ? 'a quote' : `'${t.text}'`;
    if (t.kind === 'parameter') return `'${t.text.slice(0, 40)}'`;
    if (this.guarded) return t.kind === 'number' ? 'a number' : t.kind === 'quoted_identifier' ? 'a quoted identifier' : 'a word';
    return `'${t.text.length > 40 ? `${t.text.slice(0, 40)}…` : t.text}'`;
  }

  private fail(code: JobsErrorCode, message: string, span: Span = this.here()): never {
    throw statementError(code, message, span);
  }

  private expected(what: string): never {
    this.fail('SYNTAX_ERROR', `Expected ${what}, found ${this.describe(this.peek())}`);
  }

  private expectWord(word: string, what = word): SqlToken {
    return this.acceptWord(word) ?? this.expected(what);
  }

  private expectOperator(text: string, what = `'${text}'`): SqlToken {
    return this.acceptOperator(text) ?? this.expected(what);
  }

  // ── statements ──

  statement(): LakeportStatement {
    const first = this.peek();
    if (!first) this.fail('EMPTY_STATEMENT', 'The SQL has no statement');
    const kind = kindAt(this.tokens, 0);
    let statement: LakeportStatement;
    switch (kind) {
      case 'create_secret':
        statement = this.createSecret();
        break;
      case 'grant':
      case 'revoke':
        statement = this.grant(kind);
        break;
      case 'create_tag':
        statement = this.createTag();
        break;
      case 'drop_tag':
        statement = this.dropTag();
        break;
      case 'alter_workspace':
        statement = this.alterWorkspace();
        break;
      case 'create_view':
        statement = this.createView();
        break;
      case 'drop_view':
        statement = this.dropView();
        break;
      case 'comment':
        statement = this.commentOn();
        break;
      case 'drop_dataset':
        statement = this.dropDataset();
        break;
      case 'undrop_dataset':
        statement = this.undropDataset();
        break;
      case 'alter_dataset':
        statement = this.alterDataset();
        break;
      case 'create_materialized_view':
        statement = this.createMaterializedView();
        break;
      case 'refresh_materialized_view':
        statement = this.refreshMaterializedView();
        break;
      case 'drop_materialized_view':
        statement = this.dropMaterializedView();
        break;
      case 'alter_secret':
        this.fail(
          'STATEMENT_NOT_SUPPORTED',
          "There is no ALTER SECRET: replace a secret's value with CREATE OR REPLACE SECRET <name> IN <workspace> (TYPE '<its type>', …); its type cannot change",
          { start: first.start, end: this.tokens[1]?.end ?? first.end },
        );
      default: {
        // Another statement first, with a Lakeport one after it (or a CREATE SECRET run into it).
        const starts = statementStarts(this.tokens);
        if (starts.length > 1) {
          const second = this.tokens[starts[1]];
          this.fail('MULTIPLE_STATEMENTS', 'A Lakeport statement must be the only statement in its request', { start: second.start, end: second.end });
        }
        const inner = this.tokens.findIndex((_, k) => k > 0 && ['create_secret', 'alter_secret'].includes(kindAt(this.tokens, k) ?? ''));
        if (inner > 0) {
          const at = this.tokens[inner];
          this.fail('MULTIPLE_STATEMENTS', 'CREATE SECRET must be the only statement in its request', { start: at.start, end: at.end });
        }
        const lookalike = secretLookalike(this.tokens);
        if (lookalike) {
          this.fail(
            'SYNTAX_ERROR',
            "This looks like a secret statement but is not one; it was not run and nothing of it was stored. Write CREATE [OR REPLACE] SECRET <name> IN <workspace> (TYPE '<type>', <KEY> :parameter, …)",
            lookalike,
          );
        }
        this.fail('SYNTAX_ERROR', 'Not a Lakeport statement: expected CREATE SECRET, GRANT, REVOKE, CREATE TAG, DROP TAG, ALTER WORKSPACE, CREATE VIEW, DROP VIEW, COMMENT ON, DROP DATASET, UNDROP DATASET, ALTER DATASET or CREATE/REFRESH/DROP MATERIALIZED VIEW', { start: first.start, end: first.end });
      }
    }
    this.end();
    return statement;
  }

  /** One optional `;`, then nothing: a second statement is MULTIPLE_STATEMENTS. */
  private end(): void {
    if (this.acceptOperator(';')) {
      while (this.acceptOperator(';')) {
        // empty statements are nothing
      }
      const rest = this.peek();
      if (rest) {
        this.fail('MULTIPLE_STATEMENTS', 'A Lakeport statement must be the only statement in its request; remove everything after the first `;`', {
          start: rest.start,
          end: rest.end,
        });
      }
      return;
    }
    const rest = this.peek();
    if (rest) this.fail('SYNTAX_ERROR', `Unexpected ${this.describe(rest)} after the end of the statement`);
  }

  private spanFrom(start: number): Span {
    const last = this.tokens[this.i - 1];
    return { start, end: last ? last.end : start };
  }

  // ── CREATE SECRET ──

  private createSecret(): CreateSecret {
    this.guarded = true;
    const start = this.expectWord('CREATE').start;
    let orReplace: Span | undefined;
    if (this.isWord('OR')) {
      const or = this.next()!;
      orReplace = { start: or.start, end: this.expectWord('REPLACE').end };
    }
    const modifier = this.peek();
    if (modifier && SECRET_MODIFIERS.has(upper(modifier) ?? '')) {
      this.fail(
        'STATEMENT_NOT_SUPPORTED',
        `${modifier.text.toUpperCase()} is DuckDB's syntax: a Lakeport secret is always stored, encrypted, in a workspace; write CREATE SECRET <name> IN <workspace> (…)`,
        { start: modifier.start, end: modifier.end },
      );
    }
    this.expectWord('SECRET');
    let ifNotExists: Span | undefined;
    if (this.isWord('IF')) {
      const ifToken = this.next()!;
      this.expectWord('NOT', 'NOT EXISTS after IF');
      ifNotExists = { start: ifToken.start, end: this.expectWord('EXISTS', 'EXISTS after IF NOT').end };
    }
    if (orReplace && ifNotExists) {
      this.fail('CONTRADICTORY_OPTIONS', 'OR REPLACE and IF NOT EXISTS contradict each other: use one of them', { start: orReplace.start, end: ifNotExists.end });
    }
    if (this.isOperator('(')) this.fail('SYNTAX_ERROR', 'A secret needs a name: CREATE SECRET <name> IN <workspace> (…)');
    const name = this.secretName();
    if (this.isOperator('.')) {
      this.fail('SYNTAX_ERROR', 'A secret name is not dotted: write CREATE SECRET <name> IN <workspace> (…)');
    }
    if (!this.isWord('IN')) {
      if (this.isOperator('(')) this.fail('SYNTAX_ERROR', 'IN <workspace> is required: CREATE SECRET <name> IN <workspace> (…)');
      this.expected('IN <workspace>');
    }
    this.next();
    const workspace = this.objectName('workspace');
    if (this.isOperator('.')) {
      this.fail('SYNTAX_ERROR', 'IN takes a bare workspace name, not a dotted one: a secret belongs to a whole workspace');
    }
    this.expectOperator('(', "'(' and the secret's options");
    const options: SecretOption[] = [];
    let type: Located<string> | undefined;
    const seen = new Set<string>();
    if (this.isOperator(')')) this.fail('MISSING_SECRET_KEY', "A secret needs TYPE '<type>' and its keys");
    for (;;) {
      const keyToken = this.peek();
      if (!keyToken || keyToken.kind !== 'word') this.expected("an option name such as TYPE or KEY");
      this.next();
      const key: Located<string> = { value: keyToken.text.toUpperCase(), start: keyToken.start, end: keyToken.end };
      if (seen.has(key.value)) this.fail('DUPLICATE_SECRET_KEY', `${key.value} is given more than once`, key);
      seen.add(key.value);
      if (this.isOperator('=') || this.isOperator(':=')) this.fail('SYNTAX_ERROR', `Write ${key.value} '<value>' or ${key.value} :parameter, without '='`);
      if (key.value === 'TYPE') {
        type = this.typeLiteral();
      } else {
        options.push({ key, value: this.optionValue(key.value) });
      }
      if (this.acceptOperator(',')) {
        if (this.isOperator(')')) this.fail('SYNTAX_ERROR', "Expected another option after ',', found ')'");
        continue;
      }
      if (this.acceptOperator(')')) break;
      this.expected("',' or ')'");
    }
    if (!type) this.fail('MISSING_SECRET_KEY', "TYPE is required: (TYPE '<type>', …)", { start, end: this.tokens[this.i - 1].end });
    return { kind: 'create_secret', orReplace: orReplace !== undefined, ifNotExists: ifNotExists !== undefined, name, workspace, type, options, span: this.spanFrom(start) };
  }

  private typeLiteral(): Located<string> {
    const t = this.peek();
    if (t?.kind === 'placeholder' || this.isAdjacentParameter()) this.fail('SYNTAX_ERROR', "TYPE is a string literal, not a parameter: TYPE 'gcs_service_account'");
    if (!t || t.kind !== 'string') {
      this.fail('SYNTAX_ERROR', `TYPE is a string literal, e.g. TYPE 'gcs_service_account' (found ${this.describe(t)})`);
    }
    this.next();
    return { value: this.decodeString(t).toLowerCase(), start: t.start, end: t.end };
  }

  /** `:name` glued to the previous word (`KEY:p`), which the shared lexer reads as ':' then a word. */
  private isAdjacentParameter(): boolean {
    const colon = this.peek();
    const word = this.peek(1);
    return colon?.kind === 'operator' && colon.text === ':' && word?.kind === 'word' && word.start === colon.end && /^[A-Za-z_][A-Za-z0-9_]*$/.test(word.text);
  }

  private optionValue(key: string): OptionValue {
    const t = this.peek();
    if (t?.kind === 'placeholder') {
      this.next();
      return { kind: 'parameter', name: t.text.slice(1), start: t.start, end: t.end };
    }
    if (this.isAdjacentParameter()) {
      const colon = this.next()!;
      const word = this.next()!;
      return { kind: 'parameter', name: word.text, start: colon.start, end: word.end };
    }
    if (t?.kind === 'string') {
      this.next();
      return { kind: 'literal', text: this.decodeString(t), start: t.start, end: t.end };
    }
    if (t?.kind === 'parameter') this.fail('UNSUPPORTED_PARAMETER', `Write parameters as :name (found ${this.describe(t)})`);
    this.fail('SYNTAX_ERROR', `${key} takes a :parameter or a 'string literal' (found ${this.describe(t)})`);
  }

  /**
   * The value of a string token: '…' with '' for a quote, or $$…$$ / $tag$…$tag$ verbatim.
   * E'…' (backslash escapes) is refused rather than guessed at; unterminated strings are errors.
   */
  private decodeString(t: SqlToken): string {
    const text = t.text;
    const span = { start: t.start, end: t.end };
    if (text.startsWith("'")) {
      let out = '';
      for (let k = 1; k < text.length; k++) {
        const c = text[k];
        if (c === "'") {
          if (text[k + 1] === "'") {
            out += "'";
            k++;
            continue;
          }
          if (k === text.length - 1) return out;
          break;
        }
        out += c;
      }
      this.fail('SYNTAX_ERROR', 'Unterminated string literal: close it with a quote', span);
    }
    const tag = /^\$(?:[A-Za-z_\u0080-\uffff][A-Za-z0-9_\u0080-\uffff]*)?\$/.exec(text);
    if (tag) {
      if (text.length < 2 * tag[0].length || !text.endsWith(tag[0])) this.fail('SYNTAX_ERROR', `Unterminated dollar-quoted string: close it with ${tag[0]}`, span);
      return text.slice(tag[0].length, text.length - tag[0].length);
    }
    this.fail('SYNTAX_ERROR', "Write values as '…' (a quote inside doubled: '') or $$…$$; E'…' strings are not supported here", span);
  }

  // ── names ──

  /** A name token: a bare word, a "quoted identifier", or (for names that start with a digit) a number-like word. */
  private nameToken(what: string): { text: string; span: Span; quoted: boolean } {
    const t = this.peek();
    if (t && (t.kind === 'word' || t.kind === 'number')) {
      this.next();
      return { text: t.text, span: { start: t.start, end: t.end }, quoted: false };
    }
    if (t && t.kind === 'quoted_identifier') {
      this.next();
      const inner = t.text.length >= 2 && t.text.endsWith('"') ? t.text.slice(1, -1).replace(/""/g, '"') : undefined;
      if (inner === undefined) this.fail('SYNTAX_ERROR', 'Unterminated quoted identifier: close it with "', { start: t.start, end: t.end });
      return { text: inner, span: { start: t.start, end: t.end }, quoted: true };
    }
    this.expected(what);
  }

  private secretName(): Located<string> {
    const { text, span } = this.nameToken('the secret name');
    if (!SECRET_NAME_REGEX.test(text)) {
      const why = text.length === 0 || text.length > 63 ? 'is 1-63 characters' : /^[0-9]/.test(text) ? 'must not start with a digit' : 'is letters, digits and underscores';
      this.fail('INVALID_NAME', `A secret name ${why} (letters, digits and underscores, not starting with a digit)`, span);
    }
    return { value: text.toLowerCase(), ...span };
  }

  private objectName(kind: 'workspace' | 'collection' | 'dataset'): Located<string> {
    const { text, span } = this.nameToken(`a ${kind} name`);
    if (!NAME_REGEX.test(text)) this.fail('INVALID_NAME', `'${text.slice(0, 80)}' is not a ${kind} name: use 1 to 63 letters, digits or underscores`, span);
    return { value: text.toLowerCase(), ...span };
  }

  private datasetName(what: 'dataset' | 'view' = 'dataset'): Located<DatasetName> {
    const workspace = this.objectName('workspace');
    const dot = () => this.isOperator('.') || this.fail('SYNTAX_ERROR', `Name the ${what} as workspace.collection.${what} (found ${this.describe(this.peek())})`);
    dot();
    this.next();
    const collection = this.objectName('collection');
    dot();
    this.next();
    const dataset = this.objectName('dataset');
    if (this.isOperator('.')) this.fail('SYNTAX_ERROR', `A ${what} name has three parts: workspace.collection.${what}`);
    return { value: { workspace: workspace.value, collection: collection.value, dataset: dataset.value }, start: workspace.start, end: dataset.end };
  }

  private tagName(): Located<string> {
    const t = this.peek();
    let text: string;
    let span: Span;
    if (t?.kind === 'string') {
      this.next();
      text = this.decodeString(t);
      span = { start: t.start, end: t.end };
    } else {
      ({ text, span } = this.nameToken('a tag name'));
    }
    const lower = text.toLowerCase();
    if (!TAG_NAME_REGEX.test(lower) || lower === 'current' || lower === 'previous') {
      this.fail('INVALID_NAME', `'${text.slice(0, 80)}' is not a tag name: 1 to 63 letters, digits, '_', '.' or '-', starting with a letter or '_' (not 'current' or 'previous'); quote names with '.' or '-'`, span);
    }
    return { value: lower, ...span };
  }

  // ── GRANT / REVOKE ──

  private grant(kind: 'grant' | 'revoke'): GrantStatement {
    const start = this.next()!.start;
    const roleToken = this.peek();
    const roleText = roleToken && (roleToken.kind === 'word' || roleToken.kind === 'quoted_identifier') ? roleToken.text.replace(/^"|"$/g, '').toLowerCase() : undefined;
    if (!roleToken || !isRole(roleText)) this.expected(`a role (${[...ROLES].reverse().join(', ')})`);
    this.next();
    const role: Located<Role> = { value: roleText, start: roleToken.start, end: roleToken.end };
    this.expectWord('ON', 'ON <pattern>');
    const pattern = this.pattern();
    const preposition = kind === 'grant' ? 'TO' : 'FROM';
    this.expectWord(preposition, `${preposition} <principal>`);
    const principal = this.principal();
    return { kind, role, pattern, principal, span: this.spanFrom(start) };
  }

  /** `ws.*`, `ws.coll.*`, `ws.coll.ds` (parts may be "quoted"), or the same as a 'string'. */
  private pattern(): Located<Pattern> {
    const first = this.peek();
    if (!first) this.expected('a pattern such as workspace.*');
    let text: string;
    if (first.kind === 'string') {
      this.next();
      text = this.decodeString(first);
    } else {
      const parts: string[] = [];
      for (;;) {
        if (this.isOperator('*')) {
          this.next();
          parts.push('*');
          break;
        }
        const part = this.nameToken('a pattern such as workspace.*, workspace.collection.* or workspace.collection.dataset');
        if (!NAME_REGEX.test(part.text)) this.fail('INVALID_PATTERN', `'${part.text.slice(0, 80)}' is not a name: use 1 to 63 letters, digits or underscores`, part.span);
        parts.push(part.text);
        if (!this.acceptOperator('.')) break;
      }
      text = parts.join('.');
    }
    const span = { start: first.start, end: this.tokens[this.i - 1].end };
    const pattern = parsePattern(text);
    if (!pattern) this.fail('INVALID_PATTERN', `'${text.slice(0, 200)}' is not a pattern: ${PATTERN_HINT}`, span);
    return { value: pattern, ...span };
  }

  private principal(): Located<PrincipalRef> {
    let type: PrincipalRef['type'] = 'user';
    const kw = upper(this.peek());
    const after = this.peek(1);
    // USER / SERVICE_ACCOUNT is a keyword only when a principal follows it (`TO user` names an identity 'user').
    if ((kw === 'USER' || kw === 'SERVICE_ACCOUNT') && after && after.kind !== 'operator') {
      this.next();
      type = kw === 'USER' ? 'user' : 'service_account';
    }
    const t = this.peek();
    let identity: string;
    if (t?.kind === 'string') {
      this.next();
      identity = this.decodeString(t);
    } else if (t?.kind === 'quoted_identifier') {
      identity = this.nameToken('a principal').text;
    } else if (t?.kind === 'word' || t?.kind === 'number') {
      this.next();
      identity = t.text.toLowerCase();
    } else {
      this.expected("a principal: an identity such as alice, or 'svc-loader' quoted");
    }
    const span = { start: t.start, end: t.end };
    if (!IDENTITY_REGEX.test(identity)) {
      this.fail('INVALID_PRINCIPAL', `'${identity.slice(0, 130)}' is not an identity: 1-128 letters, digits or . _ @ + -, starting with a letter or digit (quote it as 'svc-loader' when it holds - . @ or +)`, span);
    }
    return { value: { identity, type }, ...span };
  }

  // ── tags ──

  private createTag(): CreateTag {
    const start = this.expectWord('CREATE').start;
    if (this.isWord('OR')) {
      this.fail('STATEMENT_NOT_SUPPORTED', 'Tags are immutable names for snapshots: there is no CREATE OR REPLACE TAG (DROP TAG, then CREATE TAG)', {
        start: this.peek()!.start,
        end: this.peek(1)?.end ?? this.peek()!.end,
      });
    }
    this.expectWord('TAG');
    const name = this.tagName();
    this.expectWord('ON', 'ON workspace.collection.dataset');
    const dataset = this.datasetName();
    let version: Located<TagVersion> | undefined;
    if (this.isWord('AT')) {
      const at = this.next()!;
      this.expectOperator('(', "'(' after AT");
      this.expectWord('VERSION', 'VERSION => <snapshot_id>');
      const eq = this.expectOperator('=', "'=>'");
      const gt = this.peek();
      if (!gt || gt.kind !== 'operator' || gt.text !== '>' || gt.start !== eq.end) this.expected("'=>'");
      this.next();
      const v = this.peek();
      if (v?.kind === 'number' && /^\d+$/.test(v.text) && Number.isSafeInteger(Number(v.text)) && Number(v.text) > 0) {
        this.next();
        version = { value: { kind: 'id', snapshotId: Number(v.text) }, start: at.start, end: v.end };
      } else if (v?.kind === 'string') {
        const tag = this.tagName();
        version = { value: { kind: 'tag', name: tag.value }, start: at.start, end: tag.end };
      } else {
        this.expected('a snapshot id (a whole number) or a tag name in quotes');
      }
      this.expectOperator(')', "')'");
      version.end = this.tokens[this.i - 1].end;
    }
    return { kind: 'create_tag', name, dataset, version, span: this.spanFrom(start) };
  }

  private dropTag(): DropTag {
    const start = this.expectWord('DROP').start;
    this.expectWord('TAG');
    let ifExists = false;
    if (this.acceptWord('IF')) {
      this.expectWord('EXISTS', 'EXISTS after IF');
      ifExists = true;
    }
    const name = this.tagName();
    this.expectWord('ON', 'ON workspace.collection.dataset');
    const dataset = this.datasetName();
    return { kind: 'drop_tag', ifExists, name, dataset, span: this.spanFrom(start) };
  }

  // ── ALTER WORKSPACE ──

  private alterWorkspace(): AlterWorkspace {
    const start = this.expectWord('ALTER').start;
    this.expectWord('WORKSPACE');
    const workspace = this.objectName('workspace');
    if (this.isOperator('.')) this.fail('SYNTAX_ERROR', 'ALTER WORKSPACE takes a bare workspace name, not a dotted one');
    this.expectWord('SET', 'SET deletion_protection | drop_protection | history_protection TO ON | OFF');
    const prop = this.peek();
    if (!prop || (prop.kind !== 'word' && prop.kind !== 'quoted_identifier')) this.expected(`a property name (${WORKSPACE_PROPERTIES.join(', ')})`);
    const propName = prop.text.replace(/^"|"$/g, '').toLowerCase();
    if (!(WORKSPACE_PROPERTIES as readonly string[]).includes(propName)) {
      this.fail('UNKNOWN_PROPERTY', `ALTER WORKSPACE sets ${WORKSPACE_PROPERTIES.join(', ')}, not '${propName.slice(0, 80)}'`, { start: prop.start, end: prop.end });
    }
    this.next();
    if (!this.acceptWord('TO') && !this.acceptOperator('=')) this.expected("TO (or '=')");
    const v = this.peek();
    const word = upper(v);
    const value = word === 'ON' || word === 'TRUE' ? true : word === 'OFF' || word === 'FALSE' ? false : undefined;
    if (value === undefined || !v) this.expected('ON or OFF');
    this.next();
    return {
      kind: 'alter_workspace',
      workspace,
      property: { value: propName as WorkspaceProperty, start: prop.start, end: prop.end },
      value: { value, start: v.start, end: v.end },
      span: this.spanFrom(start),
    };
  }

  // ── views ──

  private createView(): CreateView {
    const start = this.expectWord('CREATE').start;
    const orReplace = this.orReplace();
    this.expectWord('VIEW');
    if (this.isWord('IF')) this.fail('STATEMENT_NOT_SUPPORTED', 'CREATE VIEW has no IF NOT EXISTS: use CREATE OR REPLACE VIEW');
    const name = this.datasetName('view');
    const comment = this.acceptWord('COMMENT') ? this.commentText() : undefined;
    this.expectWord('AS', 'AS <select>');
    const query = this.selectAfterAs();
    return { kind: 'create_view', orReplace, name, comment, query, span: this.spanFrom(start) };
  }

  /** `OR REPLACE` after CREATE, when written. */
  private orReplace(): boolean {
    if (!this.acceptWord('OR')) return false;
    this.expectWord('REPLACE', 'REPLACE after OR');
    return true;
  }

  /** After COMMENT: `[=] '<text>'`. */
  private commentText(): Located<string> {
    this.acceptOperator('=');
    const t = this.peek();
    if (t?.kind !== 'string') this.expected("a description in quotes: COMMENT '…'");
    this.next();
    return { value: this.decodeString(t), start: t.start, end: t.end };
  }

  /** The SELECT after AS as the user wrote it, up to a top-level `;` (which end() then checks), and where it starts. */
  private selectAfterAs(): Located<string> {
    const first = this.peek();
    const from = this.i;
    let depth = 0;
    while (this.peek() && !(depth === 0 && this.isOperator(';'))) {
      const t = this.next()!;
      if (t.kind === 'operator' && t.text === '(') depth++;
      if (t.kind === 'operator' && t.text === ')') depth--;
    }
    if (!first || this.i === from) this.expected('a SELECT after AS');
    const last = this.tokens[this.i - 1];
    return { value: this.sql.slice(first.start, last.end), start: first.start, end: last.end };
  }

  private dropView(): DropView {
    const start = this.expectWord('DROP').start;
    this.expectWord('VIEW');
    const ifExists = this.ifExists();
    const name = this.datasetName('view');
    return { kind: 'drop_view', ifExists, name, span: this.spanFrom(start) };
  }

  // ── COMMENT ON ──

  private commentOn(): CommentOn {
    const start = this.expectWord('COMMENT').start;
    this.expectWord('ON');
    const first = this.peek();
    let target: CommentTarget;
    if (this.acceptWord('DATASET') || this.acceptWord('TABLE')) target = 'dataset';
    else if (this.acceptWord('VIEW')) target = 'view';
    else if (this.acceptWord('MATERIALIZED')) {
      this.expectWord('VIEW', 'VIEW after MATERIALIZED');
      target = 'materialized_view';
    } else if (this.acceptWord('COLUMN')) target = 'column';
    else this.expected('DATASET, VIEW, MATERIALIZED VIEW or COLUMN');
    const targetSpan = { value: target, start: first!.start, end: this.tokens[this.i - 1].end };
    let dataset: Located<DatasetName>;
    let column: Located<string> | undefined;
    if (target === 'column') {
      const workspace = this.objectName('workspace');
      const parts: Located<string>[] = [];
      for (const kind of ['collection', 'dataset'] as const) {
        if (!this.acceptOperator('.')) this.fail('SYNTAX_ERROR', 'Name the column as workspace.collection.dataset.column');
        parts.push(this.objectName(kind));
      }
      if (!this.acceptOperator('.')) this.fail('SYNTAX_ERROR', 'Name the column as workspace.collection.dataset.column');
      const col = this.nameToken('a column name');
      column = { value: col.text, ...col.span };
      dataset = { value: { workspace: workspace.value, collection: parts[0].value, dataset: parts[1].value }, start: workspace.start, end: parts[1].end };
    } else {
      dataset = this.datasetName();
    }
    this.expectWord('IS', "IS '<description>' (or IS NULL)");
    const t = this.peek();
    let text: Located<string | null>;
    if (t?.kind === 'string') {
      this.next();
      text = { value: this.decodeString(t), start: t.start, end: t.end };
    } else if (this.isWord('NULL')) {
      this.next();
      text = { value: null, start: t!.start, end: t!.end };
    } else {
      this.expected("a description as a 'string', or NULL");
    }
    let byModel = false;
    if (this.acceptWord('BY')) {
      this.expectWord('MODEL', 'MODEL after BY (BY MODEL marks a description a language model wrote)');
      byModel = true;
    }
    return { kind: 'comment', target: targetSpan, dataset, column, text, byModel, span: this.spanFrom(start) };
  }

  // ── materialized views ──

  private createMaterializedView(): CreateMaterializedView {
    const start = this.expectWord('CREATE').start;
    const orReplace = this.orReplace();
    this.expectWord('MATERIALIZED');
    this.expectWord('VIEW');
    if (this.isWord('IF') && this.isWord('NOT', 1)) {
      this.fail('STATEMENT_NOT_SUPPORTED', 'There is no CREATE MATERIALIZED VIEW IF NOT EXISTS: use CREATE OR REPLACE MATERIALIZED VIEW', { start: this.peek()!.start, end: this.peek(2)?.end ?? this.peek(1)!.end });
    }
    const name = this.datasetName();
    let comment: Located<string> | undefined;
    let refresh: Located<RefreshPolicy> | undefined;
    for (;;) {
      if (this.isWord('COMMENT')) {
        const at = this.next()!;
        if (comment) this.fail('CONTRADICTORY_OPTIONS', 'COMMENT is given twice', { start: at.start, end: at.end });
        comment = this.commentText();
        continue;
      }
      if (this.isWord('REFRESH')) {
        const at = this.next()!;
        if (refresh) this.fail('CONTRADICTORY_OPTIONS', 'REFRESH is given twice: a materialized view has one refresh policy', { start: at.start, end: at.end });
        refresh = this.refreshPolicy(at.start);
        continue;
      }
      break;
    }
    this.expectWord('AS', comment || refresh ? 'AS <select>' : "COMMENT '…', REFRESH … or AS <select>");
    const select = this.selectAfterAs();
    return { kind: 'create_materialized_view', orReplace, name, comment, refresh, select, span: this.spanFrom(start) };
  }

  /** After REFRESH: EVERY <interval> | ON COMMIT | MANUAL. */
  private refreshPolicy(start: number): Located<RefreshPolicy> {
    if (this.acceptWord('MANUAL')) return { value: { mode: 'manual' }, start, end: this.tokens[this.i - 1].end };
    if (this.acceptWord('ON')) {
      const end = this.expectWord('COMMIT', 'COMMIT after REFRESH ON').end;
      return { value: { mode: 'on_commit' }, start, end };
    }
    if (this.acceptWord('EVERY')) {
      const interval = readInterval({
        peek: (offset) => this.peek(offset),
        next: () => this.next(),
        decodeString: (t) => this.decodeString(t),
        fail: (code, message, span) => this.fail(code, message, span),
      });
      if (interval.value < 1_000 || interval.value > 366 * 86_400_000) this.fail('INVALID_INTERVAL', 'A refresh interval is between 1 second and 366 days', interval);
      return { value: { mode: 'every', everyMs: interval.value }, start, end: interval.end };
    }
    this.expected('EVERY <interval>, ON COMMIT or MANUAL after REFRESH');
  }

  private refreshMaterializedView(): RefreshMaterializedView {
    const start = this.expectWord('REFRESH').start;
    this.expectWord('MATERIALIZED');
    this.expectWord('VIEW');
    const name = this.datasetName();
    return { kind: 'refresh_materialized_view', name, span: this.spanFrom(start) };
  }

  private dropMaterializedView(): DropMaterializedView {
    const start = this.expectWord('DROP').start;
    this.expectWord('MATERIALIZED');
    this.expectWord('VIEW');
    const ifExists = this.ifExists();
    const name = this.datasetName();
    return { kind: 'drop_materialized_view', ifExists, name, span: this.spanFrom(start) };
  }

  // ── DROP / UNDROP / ALTER DATASET ──

  private ifExists(): boolean {
    if (!this.acceptWord('IF')) return false;
    this.expectWord('EXISTS', 'EXISTS after IF');
    return true;
  }

  private dropDataset(): DropDataset {
    const start = this.expectWord('DROP').start;
    this.expectWord('DATASET');
    const ifExists = this.ifExists();
    const dataset = this.datasetName();
    return { kind: 'drop_dataset', ifExists, dataset, span: this.spanFrom(start) };
  }

  private undropDataset(): UndropDataset {
    const start = this.expectWord('UNDROP').start;
    this.expectWord('DATASET');
    const dataset = this.datasetName();
    return { kind: 'undrop_dataset', dataset, span: this.spanFrom(start) };
  }

  /** ALTER DATASET <name> <action>: the name, then the action's own parse method. */
  private alterDataset(): LakeportStatement {
    const start = this.expectWord('ALTER').start;
    this.expectWord('DATASET');
    const dataset = this.datasetName();
    const action = upper(this.peek());
    switch (action) {
      case 'ROLLBACK':
        return this.alterDatasetRollback(start, dataset);
      case 'EXPIRE':
        return this.alterDatasetExpire(start, dataset);
      case 'COMPACT':
        return this.alterDatasetCompact(start, dataset);
      case 'SET':
      case 'UNSET':
        if (this.isWord('SORTED', 1)) return this.alterDatasetSort(start, dataset, action === 'SET' ? 'set' : 'unset');
        this.expected('SET SORTED BY (…) or UNSET SORTED BY');
      default:
        this.expected('ROLLBACK TO …, EXPIRE SNAPSHOTS …, COMPACT, SET SORTED BY (…) or UNSET SORTED BY');
    }
  }

  private alterDatasetSort(start: number, dataset: Located<DatasetName>, action: 'set' | 'unset'): AlterDatasetSort {
    this.next();
    this.expectWord('SORTED');
    this.expectWord('BY', 'BY after SORTED');
    if (action === 'unset') return { kind: 'alter_dataset_sort', dataset, keys: null, span: this.spanFrom(start) };
    this.expectOperator('(', "'(' and the columns rows are sorted by");
    const keys: Located<SortKeySpec>[] = [];
    for (;;) {
      const col = this.nameToken('a column name');
      let direction: 'asc' | 'desc' = 'asc';
      let end = col.span.end;
      const dir = upper(this.peek());
      if (dir === 'ASC' || dir === 'DESC') {
        direction = dir === 'DESC' ? 'desc' : 'asc';
        end = this.next()!.end;
      }
      if (keys.some((k) => k.value.column.toLowerCase() === col.text.toLowerCase())) this.fail('SYNTAX_ERROR', `Column '${col.text.slice(0, 80)}' appears twice in SORTED BY`, col.span);
      keys.push({ value: { column: col.text, direction }, start: col.span.start, end });
      if (this.acceptOperator(',')) continue;
      this.expectOperator(')', "',' or ')'");
      break;
    }
    return { kind: 'alter_dataset_sort', dataset, keys, span: this.spanFrom(start) };
  }

  private alterDatasetRollback(start: number, dataset: Located<DatasetName>): AlterDatasetRollback {
    this.expectWord('ROLLBACK');
    this.expectWord('TO', 'TO SNAPSHOT <id> or TO TAG <tag>');
    let target: Located<TagVersion>;
    const what = this.peek();
    if (this.acceptWord('SNAPSHOT')) {
      const v = this.peek();
      if (!(v?.kind === 'number' && /^\d+$/.test(v.text) && Number.isSafeInteger(Number(v.text)) && Number(v.text) > 0)) this.expected('a snapshot id (a whole number)');
      this.next();
      target = { value: { kind: 'id', snapshotId: Number(v.text) }, start: what!.start, end: v.end };
    } else if (this.acceptWord('TAG')) {
      const tag = this.tagName();
      target = { value: { kind: 'tag', name: tag.value }, start: what!.start, end: tag.end };
    } else {
      this.expected('SNAPSHOT <id> or TAG <tag>');
    }
    return { kind: 'alter_dataset_rollback', dataset, target, span: this.spanFrom(start) };
  }

  private alterDatasetExpire(start: number, dataset: Located<DatasetName>): AlterDatasetExpire {
    this.expectWord('EXPIRE');
    this.expectWord('SNAPSHOTS');
    this.expectWord('OLDER', 'OLDER THAN <interval>');
    this.expectWord('THAN', 'THAN <interval>');
    const olderThan = readInterval({
      peek: (offset) => this.peek(offset),
      next: () => this.next(),
      decodeString: (t) => this.decodeString(t),
      fail: (code, message, span) => this.fail(code, message, span),
    });
    let retainLast: Located<number> | undefined;
    if (this.isWord('RETAIN')) {
      const retain = this.next()!;
      this.expectWord('LAST', 'LAST <n>');
      const n = this.peek();
      if (!(n?.kind === 'number' && /^\d+$/.test(n.text) && Number(n.text) <= 1_000_000)) this.expected('a number of snapshots to keep (a whole number)');
      this.next();
      retainLast = { value: Number(n.text), start: retain.start, end: n.end };
    }
    return { kind: 'alter_dataset_expire', dataset, olderThan, retainLast, span: this.spanFrom(start) };
  }

  private alterDatasetCompact(start: number, dataset: Located<DatasetName>): AlterDatasetCompact {
    const keyword = this.expectWord('COMPACT');
    return { kind: 'alter_dataset_compact', dataset, action: { start: keyword.start, end: keyword.end }, span: this.spanFrom(start) };
  }
}

// (ALTER DATASET is below ALTER WORKSPACE, inside the class.)

// ── history text ──

const GRAMMAR_WORDS = new Set(['in', 'if', 'not', 'exists', 'or', 'replace', 'secret', 'type', 'create', 'on', 'to', 'from', 'at', 'set']);

/** A name as it can be written back: bare when it is a plain word, else quoted. */
function writeName(name: string): string {
  return /^[a-z_][a-z0-9_]*$/.test(name) && !GRAMMAR_WORDS.has(name) ? name : `"${name.replace(/"/g, '""')}"`;
}

/**
 * The CREATE SECRET text the job history keeps: rebuilt from the parse, with every literal value
 * lifted out as `:redacted_<key>` and comments dropped, so nothing the user wrote beyond names,
 * keys and parameter names is stored or logged. (`KEY 'x'` → `KEY :redacted_key`.)
 */
export function redactedSecretText(s: CreateSecret): string {
  const head = ['CREATE', s.orReplace ? 'OR REPLACE' : '', 'SECRET', s.ifNotExists ? 'IF NOT EXISTS' : '', writeName(s.name.value), 'IN', writeName(s.workspace.value)].filter(Boolean).join(' ');
  const options = [`TYPE '${s.type.value.replace(/'/g, "''")}'`, ...s.options.map((o) => `${o.key.value} :${o.value.kind === 'parameter' ? o.value.name : `redacted_${o.key.value.toLowerCase()}`}`)];
  return `${head} (${options.join(', ')})`;
}
