/** A multipart/form-data body for app.inject, built by the platform's own FormData encoder. */
export async function multipartBody(parts: { contract?: unknown; samples?: { name: string; content: string | Buffer }[] }) {
  const form = new FormData();
  if (parts.contract !== undefined) form.append('contract', typeof parts.contract === 'string' ? parts.contract : JSON.stringify(parts.contract));
  for (const s of parts.samples ?? []) form.append('sample', new Blob([typeof s.content === 'string' ? s.content : new Uint8Array(s.content)]), s.name);
  const response = new Response(form);
  return { payload: Buffer.from(await response.arrayBuffer()), headers: { 'content-type': response.headers.get('content-type')! } };
}
