import type { Api } from './lake.ts';
import { requestJson } from './http.ts';

/** What the jobs service's status endpoint answers, as far as the benches read it. */
export interface JobStatus {
  execution_id: string;
  status: string;
  in_progress: boolean;
  row_count: number | null;
  error: { code: string; message: string } | null;
  timings: { queued_ms: number | null; running_ms: number | null; total_ms: number | null };
}

/** Submits a job; its execution id. */
export async function submitJob(api: Api, sql: string): Promise<string> {
  const submitted = await requestJson<{ execution_id: string }>(`${api.url}/jobs/api/v1/jobs`, {
    method: 'POST',
    headers: { ...api.auth, 'content-type': 'application/json' },
    body: JSON.stringify({ sql_text: sql }),
  });
  return submitted.execution_id;
}

/** Long-polls the job until it ends; throws unless it succeeded. */
export async function waitForJob(api: Api, id: string): Promise<JobStatus> {
  for (;;) {
    const status = await requestJson<JobStatus>(`${api.url}/jobs/api/v1/jobs/${id}/status?wait=30`, { headers: api.auth });
    if (status.in_progress) continue;
    if (status.status !== 'succeeded') throw new Error(`job ${id} ${status.status}: ${JSON.stringify(status.error)}`);
    return status;
  }
}
