import { describe, expect, it } from 'vitest';
import { StatementError } from './errors.ts';
import { isLakeportText, parseStatement, type CreateMaterializedView } from './parser.ts';

function errorOf(sql: string) {
  try {
    parseStatement(sql);
  } catch (error) {
    if (!(error instanceof StatementError)) throw error;
    return { code: error.code, at: error.span ? sql.slice(error.span.start, error.span.end) : undefined };
  }
  throw new Error(`parsed: ${sql}`);
}
const create = (sql: string) => parseStatement(sql) as CreateMaterializedView;

describe('CREATE / REFRESH / DROP MATERIALIZED VIEW', () => {
  it('are Lakeport statements', () => {
    for (const sql of ['CREATE MATERIALIZED VIEW a.b.c AS SELECT 1', 'create or replace materialized view a.b.c as select 1', 'REFRESH MATERIALIZED VIEW a.b.c', 'drop materialized view if exists a.b.c']) {
      expect(isLakeportText(sql), sql).toBe(true);
    }
    expect(isLakeportText('SELECT 1 AS refresh')).toBe(false);
  });

  it('parses the name, comment, refresh policy and the select as written, with its offset', () => {
    const sql = "CREATE OR REPLACE MATERIALIZED VIEW Sales.Agg.\"Totals\" COMMENT 'By ''region''' REFRESH EVERY INTERVAL '1 hour 30 minutes' AS SELECT region, sum(x) FROM sales.raw.lines GROUP BY 1;";
    const s = create(sql);
    expect(s).toMatchObject({ orReplace: true, name: { value: { workspace: 'sales', collection: 'agg', dataset: 'totals' } }, comment: { value: "By 'region'" }, refresh: { value: { mode: 'every', everyMs: 5_400_000 } } });
    expect(s.select.value).toBe('SELECT region, sum(x) FROM sales.raw.lines GROUP BY 1');
    expect(sql.slice(s.select.start, s.select.end)).toBe(s.select.value);
  });

  it('reads every interval form and policy', () => {
    expect(create("CREATE MATERIALIZED VIEW a.b.c REFRESH EVERY '15 minutes' AS SELECT 1").refresh?.value).toEqual({ mode: 'every', everyMs: 900_000 });
    expect(create('CREATE MATERIALIZED VIEW a.b.c REFRESH EVERY 7 DAYS AS SELECT 1').refresh?.value).toEqual({ mode: 'every', everyMs: 7 * 86_400_000 });
    expect(create('CREATE MATERIALIZED VIEW a.b.c REFRESH EVERY 1 week AS SELECT 1').refresh?.value).toEqual({ mode: 'every', everyMs: 604_800_000 });
    expect(create('CREATE MATERIALIZED VIEW a.b.c REFRESH ON COMMIT AS SELECT 1').refresh?.value).toEqual({ mode: 'on_commit' });
    expect(create('CREATE MATERIALIZED VIEW a.b.c REFRESH MANUAL AS SELECT 1').refresh?.value).toEqual({ mode: 'manual' });
    expect(create('CREATE MATERIALIZED VIEW a.b.c AS SELECT 1').refresh).toBeUndefined();
    // A select with parentheses and a `;` inside a string.
    expect(create("CREATE MATERIALIZED VIEW a.b.c AS (SELECT ';' AS x)").select.value).toBe("(SELECT ';' AS x)");
  });

  it('points at what is wrong', () => {
    expect(errorOf("CREATE MATERIALIZED VIEW a.b.c REFRESH EVERY '3 fortnights' AS SELECT 1")).toEqual({ code: 'INVALID_INTERVAL', at: "'3 fortnights'" });
    expect(errorOf('CREATE MATERIALIZED VIEW a.b.c REFRESH EVERY 0 SECONDS AS SELECT 1')).toEqual({ code: 'INVALID_INTERVAL', at: '0 SECONDS' });
    expect(errorOf('CREATE MATERIALIZED VIEW a.b.c REFRESH EVERY 5 AS SELECT 1')).toMatchObject({ code: 'INVALID_INTERVAL', at: '5 AS' });
    expect(errorOf('CREATE MATERIALIZED VIEW a.b.c REFRESH DAILY AS SELECT 1')).toMatchObject({ code: 'SYNTAX_ERROR', at: 'DAILY' });
    expect(errorOf('CREATE MATERIALIZED VIEW a.b.c REFRESH MANUAL REFRESH ON COMMIT AS SELECT 1')).toMatchObject({ code: 'CONTRADICTORY_OPTIONS', at: 'REFRESH' });
    expect(errorOf('CREATE MATERIALIZED VIEW a.b.c AS')).toMatchObject({ code: 'SYNTAX_ERROR' });
    expect(errorOf('CREATE MATERIALIZED VIEW a.b AS SELECT 1')).toMatchObject({ code: 'SYNTAX_ERROR', at: 'AS' });
    expect(errorOf('CREATE MATERIALIZED VIEW a.b.c SELECT 1')).toMatchObject({ code: 'SYNTAX_ERROR', at: 'SELECT' });
    expect(errorOf('CREATE MATERIALIZED VIEW IF NOT EXISTS a.b.c AS SELECT 1')).toMatchObject({ code: 'STATEMENT_NOT_SUPPORTED', at: 'IF NOT EXISTS' });
    expect(errorOf('CREATE MATERIALIZED VIEW a.b.c AS SELECT 1; SELECT 2')).toMatchObject({ code: 'MULTIPLE_STATEMENTS', at: 'SELECT' });
    expect(errorOf('REFRESH MATERIALIZED VIEW a.b.c NOW')).toMatchObject({ code: 'SYNTAX_ERROR', at: 'NOW' });
    expect(errorOf('DROP MATERIALIZED VIEW IF a.b.c')).toMatchObject({ code: 'SYNTAX_ERROR', at: 'a' });
  });

  it('REFRESH and DROP', () => {
    expect(parseStatement('REFRESH MATERIALIZED VIEW a.b.c;')).toMatchObject({ kind: 'refresh_materialized_view', name: { value: { workspace: 'a', collection: 'b', dataset: 'c' } } });
    expect(parseStatement('DROP MATERIALIZED VIEW IF EXISTS a.b.c')).toMatchObject({ kind: 'drop_materialized_view', ifExists: true });
    expect(parseStatement('DROP MATERIALIZED VIEW a.b.c')).toMatchObject({ kind: 'drop_materialized_view', ifExists: false });
  });
});
