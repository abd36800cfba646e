import fs from 'node:fs';

/**
 * The 1-based physical line on which CSV record `record` (1-based, the header being record 1)
 * starts, counting newlines inside quoted fields. DuckDB reports records; people read lines.
 */
export async function csvRecordLine(path: string, record: number, quote = '"'): Promise<number> {
  const q = quote.charCodeAt(0);
  let line = 1;
  let current = 1;
  let inQuotes = false;
  for await (const chunk of fs.createReadStream(path, { highWaterMark: 1 << 20 }) as AsyncIterable<Buffer>) {
    for (const byte of chunk) {
      if (current >= record) return line;
      // A doubled quote inside a quoted field toggles twice: no net change.
      if (byte === q) inQuotes = !inQuotes;
      else if (byte === 0x0a) {
        line++;
        if (!inQuotes) current++;
      }
    }
  }
  return line;
}
