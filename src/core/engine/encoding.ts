/**
 * Text encodings of uploaded CSV/JSONL files. DuckDB reads UTF-8 only (its own latin-1 refuses bytes
 * 0x80–0x9F and it has no windows-1252), so single-byte files are turned into UTF-8 here, byte by
 * byte, while they stream: a single-byte encoding has no state, so every piece converts on its own.
 */
import { isUtf8 } from 'node:buffer';
import fs from 'node:fs';
import { countNewlines } from './csv-lines.ts';

export const TEXT_ENCODINGS = ['utf-8', 'latin-1', 'windows-1252'] as const;
export type TextEncoding = (typeof TEXT_ENCODINGS)[number];

/** Every spelling a client may send, and the encoding it names. */
export const ENCODING_NAMES: Record<string, TextEncoding> = {
  'utf-8': 'utf-8',
  'latin-1': 'latin-1',
  'iso-8859-1': 'latin-1',
  'windows-1252': 'windows-1252',
  cp1252: 'windows-1252',
};

export function textEncoding(name: string | undefined): TextEncoding {
  return (name && ENCODING_NAMES[name.toLowerCase()]) || 'utf-8';
}

/**
 * Windows-1252's characters for bytes 0x80–0x9F (elsewhere it is Latin-1); the five bytes it leaves
 * undefined keep their Latin-1 control codes, as WHATWG's decoder does. (Node's own TextDecoder
 * decodes 'windows-1252' as Latin-1, so it is not used.)
 */
const CP1252 = [...'\u20ac\u0081\u201a\u0192\u201e\u2026\u2020\u2021\u02c6\u2030\u0160\u2039\u0152\u008d\u017d\u008f\u0090\u2018\u2019\u201c\u201d\u2022\u2013\u2014\u02dc\u2122\u0161\u203a\u0153\u009d\u017e\u0178'];

/** Each byte 0x80–0xFF of windows-1252 in UTF-8: 4 bytes a byte, the first its length. */
const CP1252_UTF8 = new Uint8Array(128 * 4);
for (let i = 0; i < 128; i++) {
  const u = Buffer.from(i < 0x20 ? CP1252[i] : String.fromCharCode(0x80 + i), 'utf8');
  CP1252_UTF8[i * 4] = u.length;
  CP1252_UTF8.set(u, i * 4 + 1);
}

function cp1252ToUtf8(buf: Buffer): Buffer {
  const out = Buffer.allocUnsafe(buf.length * 3);
  let j = 0;
  for (let i = 0; i < buf.length; i++) {
    const b = buf[i];
    if (b < 0x80) {
      out[j++] = b;
      continue;
    }
    const at = (b - 0x80) * 4;
    const n = CP1252_UTF8[at];
    out[j++] = CP1252_UTF8[at + 1];
    out[j++] = CP1252_UTF8[at + 2];
    if (n === 3) out[j++] = CP1252_UTF8[at + 3];
  }
  return out.subarray(0, j);
}

/** Bytes to UTF-8 for a single-byte encoding; undefined for UTF-8 (nothing to do). */
function decoder(encoding: TextEncoding): ((buf: Buffer) => Buffer) | undefined {
  if (encoding === 'latin-1') return (buf) => Buffer.from(buf.toString('latin1'), 'utf8'); // ISO-8859-1: byte n is U+00nn
  if (encoding === 'windows-1252') return cp1252ToUtf8;
  return undefined;
}

export function decodeToUtf8(buf: Buffer, encoding: TextEncoding): Buffer {
  return decoder(encoding)?.(buf) ?? buf;
}

/** A body as UTF-8 bytes, converted piece by piece while it streams; `sent` hears of each piece's size as sent. */
export function decodingBody(
  body: AsyncIterable<Buffer | Uint8Array | string>,
  encoding: TextEncoding | undefined,
  sent?: (bytes: number) => void,
): AsyncIterable<Buffer | Uint8Array | string> {
  const decode = decoder(encoding ?? 'utf-8');
  if (!decode) return body;
  return (async function* () {
    for await (const piece of body) {
      const buf = typeof piece === 'string' ? Buffer.from(piece) : Buffer.from(piece.buffer, piece.byteOffset, piece.byteLength);
      sent?.(buf.length);
      yield decode(buf);
    }
  })();
}

/** A byte order mark of an encoding Lakeport does not read. */
export function foreignBom(buf: Buffer): string | undefined {
  if (buf.length >= 4 && buf[0] === 0xff && buf[1] === 0xfe && buf[2] === 0 && buf[3] === 0) return 'UTF-32 LE';
  if (buf.length >= 4 && buf[0] === 0 && buf[1] === 0 && buf[2] === 0xfe && buf[3] === 0xff) return 'UTF-32 BE';
  if (buf.length >= 2 && buf[0] === 0xff && buf[1] === 0xfe) return 'UTF-16 LE';
  if (buf.length >= 2 && buf[0] === 0xfe && buf[1] === 0xff) return 'UTF-16 BE';
  return undefined;
}

/** Where a buffer stops being UTF-8: the offset and length of the first bad sequence. */
export function firstInvalidUtf8(buf: Buffer): { offset: number; length: number; truncated: boolean } | undefined {
  if (isUtf8(buf)) return undefined;
  for (let i = 0; i < buf.length; i++) {
    const b = buf[i];
    if (b < 0x80) continue;
    const n = b >= 0xc2 && b <= 0xdf ? 1 : b >= 0xe0 && b <= 0xef ? 2 : b >= 0xf0 && b <= 0xf4 ? 3 : -1;
    if (n < 0) return { offset: i, length: 1, truncated: false };
    // The second byte's range excludes overlong forms and surrogates.
    const lo = b === 0xe0 ? 0xa0 : b === 0xf0 ? 0x90 : 0x80;
    const hi = b === 0xed ? 0x9f : b === 0xf4 ? 0x8f : 0xbf;
    for (let k = 1; k <= n; k++) {
      if (i + k >= buf.length) return { offset: i, length: k, truncated: true };
      const c = buf[i + k];
      if (c < (k === 1 ? lo : 0x80) || c > (k === 1 ? hi : 0xbf)) return { offset: i, length: k, truncated: false };
    }
    i += n;
  }
  return undefined;
}

/** The single-byte encoding non-UTF-8 text most likely has: windows-1252 when it has bytes only windows-1252 gives characters to. */
export function guessEncoding(buf: Buffer): 'latin-1' | 'windows-1252' {
  for (const b of buf) if (b >= 0x80 && b <= 0x9f && CP1252[b - 0x80].charCodeAt(0) > 0xff) return 'windows-1252';
  return 'latin-1';
}

export interface NotUtf8 {
  /** 1-based physical line. */
  line: number;
  /** The bad bytes, e.g. `0xFC`. */
  bytes: string;
  /** The line as the guessed encoding reads it (cut to 120 characters). */
  text: string;
  guess: 'latin-1' | 'windows-1252';
}

/**
 * Why a text sample is not UTF-8, or undefined when it is. A sequence cut off at the very end is a
 * sample cut mid-character, not an error.
 */
export function notUtf8(buf: Buffer): NotUtf8 | undefined {
  const bad = firstInvalidUtf8(buf);
  if (!bad || (bad.truncated && bad.offset + bad.length >= buf.length)) return undefined;
  const start = buf.lastIndexOf(0x0a, bad.offset) + 1;
  const end = buf.indexOf(0x0a, bad.offset);
  const guess = guessEncoding(buf);
  const text = decodeToUtf8(buf.subarray(start, end === -1 ? buf.length : end), guess).toString('utf8').replace(/\r$/, '');
  const bytes = [...buf.subarray(bad.offset, bad.offset + bad.length)].map((b) => `0x${b.toString(16).toUpperCase().padStart(2, '0')}`).join(' ');
  return { line: 1 + countNewlines(buf, 0, bad.offset), bytes, text: text.length > 120 ? `${text.slice(0, 117)}...` : text, guess };
}

/** The words for a text that is not UTF-8, and the fix (in the API and with the CLI). */
export function notUtf8Message(found: NotUtf8): string {
  const name = found.guess === 'latin-1' ? 'Latin-1' : 'Windows-1252';
  return (
    `line ${found.line} is not valid UTF-8 (byte ${found.bytes}; read as ${name} the line is ${JSON.stringify(found.text)}). ` +
    `The file looks ${name}-encoded: negotiate with "format": {"encoding": "${found.guess}"} (lakeport upload --encoding ${found.guess}), or save it as UTF-8`
  );
}

/**
 * The first stretch of a file that is not UTF-8 (streamed; only looked for once a read failed). A
 * character cut at a piece's end is carried into the next piece.
 */
export async function notUtf8InFile(file: string): Promise<NotUtf8 | undefined> {
  let lines = 0;
  let carry = Buffer.alloc(0);
  for await (const piece of fs.createReadStream(file, { highWaterMark: 1 << 20 }) as AsyncIterable<Buffer>) {
    const buf = carry.length > 0 ? Buffer.concat([carry, piece]) : piece;
    const bad = firstInvalidUtf8(buf);
    if (bad?.truncated && bad.offset + bad.length >= buf.length) {
      // (A cut character: whatever precedes it is UTF-8.)
      lines += countNewlines(buf, 0, bad.offset);
      carry = Buffer.from(buf.subarray(bad.offset));
      continue;
    }
    if (bad) {
      const found = notUtf8(buf)!;
      return { ...found, line: found.line + lines };
    }
    lines += countNewlines(buf);
    carry = Buffer.alloc(0);
  }
  return carry.length > 0 ? { line: lines + 1, bytes: [...carry].map((b) => `0x${b.toString(16).toUpperCase()}`).join(' '), text: '', guess: guessEncoding(carry) } : undefined;
}
