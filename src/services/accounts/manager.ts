import type { FastifyRequest } from 'fastify';
import { requireManage, type ManagementAction } from '../../core/authz/index.ts';
import { principalOf } from '../../core/http/index.ts';

/** The caller of a management action, once core/authz allows its credential to take it (a narrowed one mostly may not). */
export function managerOf(request: FastifyRequest, action: ManagementAction): string {
  const principal = principalOf(request);
  requireManage(principal, action);
  return principal.identity;
}
