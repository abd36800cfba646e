import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { lineColumn, offsetMapper, rewritePlaceholders, tokenizeSql } from './placeholders.ts';

const rewrite = (sql: string) => rewritePlaceholders(sql).sql;
const names = (sql: string) => rewritePlaceholders(sql).names;

describe('rewritePlaceholders', () => {
  it('rewrites :name to $name and lists names in order of first use', () => {
    const r = rewritePlaceholders('SELECT * FROM ws.c.d WHERE a = :a AND b IN (:b, :a) AND c > :c_2');
    expect(r.sql).toBe('SELECT * FROM ws.c.d WHERE a = $a AND b IN ($b, $a) AND c > $c_2');
    expect(r.names).toEqual(['a', 'b', 'c_2']);
    expect(r.placeholders.map((p) => [p.name, p.start, p.end])).toEqual([
      ['a', 31, 33],
      ['b', 44, 46],
      ['a', 48, 50],
      ['c_2', 60, 64],
    ]);
  });

  it('handles placeholders at the very start and end, and alone', () => {
    expect(rewrite(':x')).toBe('$x');
    expect(rewrite(':x = 1 OR y = :y')).toBe('$x = 1 OR y = $y');
    expect(names(':x = 1 OR y = :y')).toEqual(['x', 'y']);
    expect(rewrite('SELECT :_')).toBe('SELECT $_');
  });

  it('treats names case-insensitively like DuckDB, keeping the first spelling', () => {
    const r = rewritePlaceholders('SELECT :Day, :day, :DAY');
    expect(r.sql).toBe('SELECT $Day, $day, $DAY');
    expect(r.names).toEqual(['Day']);
  });

  it('leaves string literals alone', () => {
    for (const sql of [
      "SELECT ':x'",
      "SELECT 'it''s :x'",
      "SELECT E'\\' :x'",
      "SELECT e'a\\\\' || 'b :x'",
      'SELECT $$ :x $$',
      'SELECT $tag$ :x $not$ :y $tag$',
      "SELECT X'3A78'",
      "SELECT 'unterminated :x",
    ]) {
      expect(rewrite(sql), sql).toBe(sql);
    }
    // after the literal ends, placeholders count again
    expect(rewrite("SELECT 'it''s' || :x")).toBe("SELECT 'it''s' || $x");
    expect(rewrite("SELECT E'\\'' || :x")).toBe("SELECT E'\\'' || $x");
    expect(rewrite('SELECT $t$ :a $t$ || :b')).toBe('SELECT $t$ :a $t$ || $b');
  });

  it('knows an E-string only starts a word', () => {
    // `name'…'` is not an E-string: the backslash does not escape the quote
    expect(rewrite("SELECT some'\\' , :x")).toBe("SELECT some'\\' , $x");
  });

  it('leaves quoted identifiers and comments alone', () => {
    for (const sql of [
      'SELECT "a :x" FROM t',
      'SELECT "a "" :x" FROM t',
      'SELECT 1 -- :x',
      'SELECT 1 /* :x */',
      'SELECT 1 /* outer /* inner :x */ still :y */',
      'SELECT 1 /* unterminated :x',
    ]) {
      expect(rewrite(sql), sql).toBe(sql);
    }
    expect(rewrite('SELECT 1 -- :x\n, :y')).toBe('SELECT 1 -- :x\n, $y');
    expect(rewrite('SELECT 1 /* a /* b */ c */ + :y')).toBe('SELECT 1 /* a /* b */ c */ + $y');
  });

  it('leaves casts alone', () => {
    expect(rewrite('SELECT a::int, :p::VARCHAR, (:q)::DATE, x :: int')).toBe('SELECT a::int, $p::VARCHAR, ($q)::DATE, x :: int');
    expect(rewrite("SELECT '1'::VARCHAR")).toBe("SELECT '1'::VARCHAR");
    expect(rewrite('SELECT ::VARCHAR')).toBe('SELECT ::VARCHAR');
    expect(rewrite('SELECT a:::b')).toBe('SELECT a:::b');
  });

  it('leaves slices, struct keys, lambdas and := alone', () => {
    expect(rewrite('SELECT l[1:2], l[1:n], l[lo:hi], l[:n], l[ :n], l[/* c */:n], f(x)[:n], "c"[:n]')).toBe(
      'SELECT l[1:2], l[1:n], l[lo:hi], l[:n], l[ :n], l[/* c */:n], f(x)[:n], "c"[:n]',
    );
    expect(rewrite("SELECT {'k':v, k2:v2}, list_transform(l, lambda x:x + 1), read_csv('f', sep := ',')")).toBe(
      "SELECT {'k':v, k2:v2}, list_transform(l, lambda x:x + 1), read_csv('f', sep := ',')",
    );
  });

  it('finds placeholders in list literals, slice bounds written as operands, and struct values', () => {
    expect(rewrite('SELECT [:a, :b]')).toBe('SELECT [$a, $b]');
    expect(rewrite('SELECT l[1:(:n)], l[1: :n], l[(:i)]')).toBe('SELECT l[1:($n)], l[1: $n], l[($i)]');
    expect(rewrite("SELECT {'k': :v}")).toBe("SELECT {'k': $v}");
  });

  it('handles JSON operators next to placeholders', () => {
    expect(rewrite("SELECT j->>'$.a:b', j->'$.x' FROM t WHERE j->>'k' = :k")).toBe("SELECT j->>'$.a:b', j->'$.x' FROM t WHERE j->>'k' = $k");
  });

  it('requires an ASCII name not run on into other identifier characters', () => {
    expect(rewrite('SELECT :név')).toBe('SELECT :név');
    expect(rewrite('SELECT :名前')).toBe('SELECT :名前');
    expect(rewrite('SELECT :a$')).toBe('SELECT :a$');
    expect(rewrite('SELECT :1')).toBe('SELECT :1');
    expect(rewrite('SELECT : x')).toBe('SELECT : x');
    // a name may be followed by any non-identifier character, non-ASCII punctuation excepted
    expect(rewrite("SELECT 'é' || :x, '😀' || :y")).toBe("SELECT 'é' || $x, '😀' || $y");
  });

  it('keeps offsets: the rewrite changes only the colons', () => {
    const sql = "SELECT 'é😀' AS \"x\", :a FROM t WHERE b = :b";
    const r = rewritePlaceholders(sql);
    expect(r.sql.length).toBe(sql.length);
    for (let i = 0; i <= sql.length; i++) expect(r.toOriginal(i)).toBe(i);
  });

  it('returns the input unchanged when there is nothing to rewrite', () => {
    const r = rewritePlaceholders('');
    expect(r).toMatchObject({ sql: '', names: [], placeholders: [] });
    expect(r.toOriginal(0)).toBe(0);
  });
});

describe('offsetMapper', () => {
  // "ab:xyz cd :q e" with ":xyz" → "?" (1 char) and ":q" → "$qq_long" (8 chars)
  const original = 'ab:xyz cd :q e';
  const map = offsetMapper(
    [
      { originalStart: 2, originalEnd: 6, replacementLength: 1 },
      { originalStart: 10, originalEnd: 12, replacementLength: 8 },
    ],
    original.length,
  );
  // rewritten: "ab? cd $qq_long e"
  it('maps offsets before, inside and after edits that change lengths', () => {
    expect(map(0)).toBe(0);
    expect(map(1)).toBe(1);
    expect(map(2)).toBe(2); // the replacement → its span's start
    expect(map(3)).toBe(6); // " " after it
    expect(map(4)).toBe(7); // "c"
    expect(map(7)).toBe(10); // "$" of the second replacement
    expect(map(8)).toBe(11); // inside it, within the original span
    expect(map(14)).toBe(11); // still inside: clamped to the span's last character
    expect(map(15)).toBe(12); // " " after it
    expect(map(16)).toBe(13); // "e"
    expect(map(17)).toBe(14); // the end
  });

  it('clamps to the original text', () => {
    expect(map(-5)).toBe(0);
    expect(map(1000)).toBe(original.length);
    expect(map(Number.NaN)).toBe(0);
  });
});

describe('lineColumn', () => {
  it('is 1-based and counts lines and characters', () => {
    const sql = 'SELECT 1\nFROM t\r\nWHERE x\ry';
    expect(lineColumn(sql, 0)).toEqual({ line: 1, column: 1 });
    expect(lineColumn(sql, 7)).toEqual({ line: 1, column: 8 });
    expect(lineColumn(sql, 9)).toEqual({ line: 2, column: 1 });
    expect(lineColumn(sql, 14)).toEqual({ line: 2, column: 6 });
    expect(lineColumn(sql, 15)).toEqual({ line: 2, column: 7 }); // the \r of \r\n
    expect(lineColumn(sql, 16)).toEqual({ line: 2, column: 7 }); // its \n
    expect(lineColumn(sql, 17)).toEqual({ line: 3, column: 1 });
    expect(lineColumn(sql, 25)).toEqual({ line: 4, column: 1 }); // after a lone \r
    expect(lineColumn(sql, 999)).toEqual({ line: 4, column: 2 });
    expect(lineColumn(sql, -1)).toEqual({ line: 1, column: 1 });
  });

  it('counts an astral character as one column', () => {
    const sql = "SELECT '😀é' x";
    expect(lineColumn(sql, sql.indexOf('x'))).toEqual({ line: 1, column: 13 });
  });
});

describe('tokenizeSql', () => {
  it('tells words, strings, numbers, parameters and placeholders apart', () => {
    const kinds = tokenizeSql("SELECT \"a\", 'b', 1.5e3, $1, $n, ?, :p, $$d$$ -- c\nFROM t /* c */;").map((t) => [t.kind, t.text]);
    expect(kinds).toEqual([
      ['word', 'SELECT'],
      ['quoted_identifier', '"a"'],
      ['operator', ','],
      ['string', "'b'"],
      ['operator', ','],
      ['number', '1.5e3'],
      ['operator', ','],
      ['parameter', '$1'],
      ['operator', ','],
      ['parameter', '$n'],
      ['operator', ','],
      ['parameter', '?'],
      ['operator', ','],
      ['placeholder', ':p'],
      ['operator', ','],
      ['string', '$$d$$'],
      ['word', 'FROM'],
      ['word', 't'],
      ['operator', ';'],
    ]);
  });
});

/** Text built from SQL's troublesome pieces, so quoting, comments and colons meet often. */
const sqlish = fc
  .array(
    fc.oneof(
      fc.constantFrom("'", '"', '$$', '$t$', '--', '/*', '*/', '\n', ':', '::', ':=', '[', ']', '(', ')', '{', '}', ',', ' ', 'E', "E'", '\\', ';', '$', '?', 'é', '😀', '\u0000'),
      fc.constantFrom(':a', ':B_1', 'x', '1', 'SELECT', 'lambda'),
      fc.string({ maxLength: 3 }),
    ),
    { maxLength: 40 },
  )
  .map((parts) => parts.join(''));

describe('properties', () => {
  it('changes nothing but the colons of the placeholders it reports', () => {
    fc.assert(
      fc.property(fc.oneof(sqlish, fc.string({ maxLength: 80, unit: 'grapheme' })), (sql) => {
        const r = rewritePlaceholders(sql);
        expect(r.sql.length).toBe(sql.length);
        const starts = new Set(r.placeholders.map((p) => p.start));
        for (let i = 0; i < sql.length; i++) {
          if (starts.has(i)) {
            expect(sql[i]).toBe(':');
            expect(r.sql[i]).toBe('$');
          } else {
            expect(r.sql[i]).toBe(sql[i]);
          }
        }
        for (const p of r.placeholders) {
          expect(sql.slice(p.start, p.end)).toMatch(/^:[A-Za-z_][A-Za-z0-9_]*$/);
          expect(sql.slice(p.start + 1, p.end)).toBe(p.name);
        }
        const distinct = new Set(r.placeholders.map((p) => p.name.toLowerCase()));
        expect(r.names.map((n) => n.toLowerCase())).toEqual([...distinct]);
        for (let i = 0; i <= sql.length; i++) expect(r.toOriginal(i)).toBe(i);
      }),
      { numRuns: 2000 },
    );
  });

  it('finds nothing to rewrite in its own output', () => {
    fc.assert(
      fc.property(sqlish, (sql) => {
        expect(rewritePlaceholders(rewritePlaceholders(sql).sql).placeholders).toEqual([]);
      }),
      { numRuns: 2000 },
    );
  });

  it('never touches what is inside a string literal or comment', () => {
    const body = fc.string({ maxLength: 20 }).map((s) => s.replace(/'/g, "''"));
    fc.assert(
      fc.property(body, fc.constantFrom(':a', ':x_1'), (inside, p) => {
        const sql = `SELECT '${inside}${p}' /* ${p} */, ${p}`;
        const r = rewritePlaceholders(sql);
        expect(r.sql).toBe(`SELECT '${inside}${p}' /* ${p} */, $${p.slice(1)}`);
      }),
    );
  });

  it('tokens cover the text in order and tokenizing always ends', () => {
    fc.assert(
      fc.property(fc.oneof(sqlish, fc.string({ maxLength: 200 })), (sql) => {
        let last = 0;
        for (const t of tokenizeSql(sql)) {
          expect(t.start).toBeGreaterThanOrEqual(last);
          expect(t.end).toBeGreaterThan(t.start);
          expect(t.text).toBe(sql.slice(t.start, t.end));
          last = t.end;
        }
        expect(last).toBeLessThanOrEqual(sql.length);
      }),
      { numRuns: 2000 },
    );
  });

  it('is fast on large inputs', () => {
    const big = "SELECT a, 'x:y', :p /* c */ FROM t -- :q\n".repeat(20_000);
    const started = Date.now();
    const r = rewritePlaceholders(big);
    expect(r.names).toEqual(['p']);
    expect(Date.now() - started).toBeLessThan(2000);
  });
});
