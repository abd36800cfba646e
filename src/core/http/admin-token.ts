import type { FastifyRequest } from 'fastify';
import { safeEqual } from '../crypto/index.ts';
import { appError } from '../errors/index.ts';

export const ADMIN_TOKEN_HEADER = 'x-admin-token';

/** The operator's admin token (`x-admin-token`), compared in constant time. */
export class AdminToken {
  constructor(private readonly token: string) {}

  /**
   * Whether the request carries the admin token. A present but wrong header is refused (401) rather
   * than ignored, so it governs even when a bearer token is also sent.
   */
  presentIn(request: FastifyRequest): boolean {
    const given = request.headers[ADMIN_TOKEN_HEADER];
    if (given === undefined) return false;
    if (typeof given !== 'string' || !safeEqual(given, this.token)) {
      throw appError('INVALID_ADMIN_TOKEN', 'The x-admin-token header does not match the admin token');
    }
    return true;
  }

  require(request: FastifyRequest): void {
    if (!this.presentIn(request)) throw appError('UNAUTHORIZED', 'This operation needs the x-admin-token header');
  }
}
