import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeToUtf8, decodingBody, firstInvalidUtf8, foreignBom, guessEncoding, notUtf8, textEncoding } from './encoding.ts';

const latin1 = (s: string) => Buffer.from(s, 'latin1');

describe('text encodings', () => {
  it('names: aliases, case, the default', () => {
    expect(textEncoding('ISO-8859-1')).toBe('latin-1');
    expect(textEncoding('cp1252')).toBe('windows-1252');
    expect(textEncoding(undefined)).toBe('utf-8');
  });

  it('Latin-1 is byte n = U+00nn, 0x80–0x9F included; windows-1252 maps them to its characters', () => {
    expect(decodeToUtf8(latin1('Z\xfcrich caf\xe9'), 'latin-1').toString()).toBe('Zürich café');
    expect(decodeToUtf8(Buffer.from([0x80, 0x93, 0x94]), 'latin-1').toString()).toBe('\u0080\u0093\u0094');
    expect(decodeToUtf8(Buffer.from([0x80, 0x93, 0x68, 0x94, 0x9d]), 'windows-1252').toString()).toBe('€“h”\u009d');
  });

  it('a streamed body converts piece by piece, whatever the cuts', async () => {
    const bytes = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    async function* pieces() {
      for (let i = 0; i < bytes.length; i += 7) yield bytes.subarray(i, i + 7);
    }
    const out: Buffer[] = [];
    for await (const p of decodingBody(pieces(), 'windows-1252')) out.push(Buffer.from(p as Buffer));
    expect(Buffer.concat(out).equals(decodeToUtf8(bytes, 'windows-1252'))).toBe(true);
    const text = Buffer.concat(out).toString('utf8');
    expect([...text].length).toBe(256);
    expect(text.slice(0x80, 0xa0)).toBe('€\u0081‚ƒ„…†‡ˆ‰Š‹Œ\u008dŽ\u008f\u0090‘’“”•–—˜™š›œ\u009džŸ');
    expect(text.slice(0xa0)).toBe(bytes.subarray(0xa0).toString('latin1'));
  });

  it('finds the first bad UTF-8 sequence and agrees with a fatal decoder', () => {
    expect(firstInvalidUtf8(Buffer.from('a,é\n'))).toBeUndefined();
    expect(firstInvalidUtf8(latin1('a\nZ\xfcrich'))).toEqual({ offset: 3, length: 1, truncated: false });
    expect(firstInvalidUtf8(Buffer.from([0x61, 0xed, 0xa0, 0x80]))).toMatchObject({ offset: 1, truncated: false }); // a surrogate
    expect(firstInvalidUtf8(Buffer.from([0x61, 0xe2, 0x82]))).toEqual({ offset: 1, length: 2, truncated: true });
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 40 }), (bytes) => {
        const buf = Buffer.from(bytes);
        let valid = true;
        try {
          new TextDecoder('utf-8', { fatal: true }).decode(buf);
        } catch {
          valid = false;
        }
        expect(firstInvalidUtf8(buf) === undefined).toBe(valid);
      }),
    );
  });

  it('describes a non-UTF-8 sample: line, bytes, the line as read, the likely encoding', () => {
    expect(notUtf8(latin1('id,city\n1,Zurich\n2,Z\xfcrich\n'))).toEqual({ line: 3, bytes: '0xFC', text: '2,Zürich', guess: 'latin-1' });
    expect(notUtf8(Buffer.from([...Buffer.from('a\r\n'), 0x93, 0x68, 0x94, 0x0d, 0x0a]))).toEqual({ line: 2, bytes: '0x93', text: '“h”', guess: 'windows-1252' });
    // A sample cut in the middle of a character is still UTF-8.
    expect(notUtf8(Buffer.from('a,€').subarray(0, 4))).toBeUndefined();
    expect(guessEncoding(latin1('caf\xe9'))).toBe('latin-1');
  });

  it('recognises UTF-16 and UTF-32 byte order marks, not UTF-8 ones', () => {
    expect(foreignBom(Buffer.from([0xff, 0xfe, 0x61, 0]))).toBe('UTF-16 LE');
    expect(foreignBom(Buffer.from([0xfe, 0xff, 0, 0x61]))).toBe('UTF-16 BE');
    expect(foreignBom(Buffer.from([0xff, 0xfe, 0, 0]))).toBe('UTF-32 LE');
    expect(foreignBom(Buffer.from([0xef, 0xbb, 0xbf, 0x61]))).toBeUndefined();
  });
});
