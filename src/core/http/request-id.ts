import crypto from 'node:crypto';
import type { IncomingMessage } from 'node:http';

const SAFE_ID = /^[A-Za-z0-9._-]{1,128}$/;

/** Fastify options: honour a caller's `x-request-id` when it is safe to log, else make one. */
export const requestIdOptions = {
  requestIdHeader: false as const,
  genReqId(req: IncomingMessage): string {
    const given = req.headers['x-request-id'];
    return typeof given === 'string' && SAFE_ID.test(given) ? given : crypto.randomUUID();
  },
};
