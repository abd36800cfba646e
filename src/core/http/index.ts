export {
  requireAuth,
  authenticateRequest,
  authenticateScoped,
  principalOf,
  bearerToken,
  InvalidTokenError,
  ACCESS_TOKEN_COOKIE,
  CSRF_COOKIE,
  CSRF_HEADER,
  setSessionCookies,
  clearSessionCookies,
  type TokenVerifier,
} from './authenticate.ts';
export { queryBoolean } from './params.ts';
export { requestIdOptions } from './request-id.ts';
export { serviceDocs, ErrorBody, ValidationErrorBody, BinaryBody, mediaResponse, sendJsonText, type Media } from './openapi.ts';
export { mountApi, serviceModule, type ServiceApi, type ServiceModule } from './service-module.ts';
export { AdminToken, ADMIN_TOKEN_HEADER } from './admin-token.ts';
export { PublicUrl } from './public-url.ts';
export { Identity, IDENTITY_REGEX, WorkspaceName } from './schemas.ts';
export { registerInputGuards, refuseNul, jsonTooDeep, jsonTooDeepError, MAX_JSON_DEPTH } from './input-guards.ts';
export { Metrics, MetricsAccess } from './metrics.ts';
export { readinessRoute, READINESS_TIMEOUT_MS, type ReadinessCheck } from './readiness.ts';
