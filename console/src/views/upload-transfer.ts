/**
 * The upload wizard's byte work: the negotiation sample of a file, and a write that reports its
 * progress (XMLHttpRequest's upload events: fetch cannot report request-body progress).
 */

/** Text files up to this size are sampled whole; larger ones by their head (the CLI's default budget). */
export const SAMPLE_BYTES = 1024 * 1024;

/**
 * What the negotiation gets of `file`: Parquet its footer (footer, length, `PAR1`); CSV/JSONL the
 * whole file when small, else its first SAMPLE_BYTES cut after the last line break.
 */
export async function sampleOf(file: File): Promise<Blob> {
  if (/\.parquet$/i.test(file.name)) {
    if (file.size < 12) return file;
    const footerLength = new DataView(await file.slice(file.size - 8, file.size - 4).arrayBuffer()).getUint32(0, true);
    return file.slice(Math.max(0, file.size - 8 - footerLength));
  }
  if (file.size <= SAMPLE_BYTES) return file;
  const head = new Uint8Array(await file.slice(0, SAMPLE_BYTES).arrayBuffer());
  return file.slice(0, head.lastIndexOf(0x0a) + 1);
}

export interface SentFile {
  status: number;
  /** The parsed JSON answer (or its text when it is not JSON). */
  body: unknown;
}

/** POSTs `file` as the request body, calling `onProgress(sent, total)` as bytes leave; resolves with the answer whatever its status. */
export function sendWithProgress(url: string, file: Blob, headers: Record<string, string>, onProgress: (sent: number, total: number) => void, signal?: AbortSignal): Promise<SentFile> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', url);
    xhr.withCredentials = true;
    for (const [name, value] of Object.entries(headers)) xhr.setRequestHeader(name, value);
    xhr.upload.onprogress = (event) => onProgress(event.loaded, event.lengthComputable ? event.total : file.size);
    xhr.onload = () => {
      let body: unknown = xhr.responseText;
      try {
        body = JSON.parse(xhr.responseText);
      } catch {
        /* not JSON: keep the text */
      }
      resolve({ status: xhr.status, body });
    };
    xhr.onerror = () => reject(new Error('The connection broke while the file was sent'));
    xhr.onabort = () => reject(new DOMException('The upload was cancelled', 'AbortError'));
    signal?.addEventListener('abort', () => xhr.abort(), { once: true });
    xhr.send(file);
  });
}
