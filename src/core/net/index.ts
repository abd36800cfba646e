/** Outbound network calls to addresses users chose: the public-address check and the guarded HTTP client (docs/security.md). */
export { isPublicAddress, systemResolver, type HostResolver } from './addresses.ts';
export { OutboundError, OutboundHttp, type OutboundFailure, type OutboundRequest, type OutboundResponse, type OutboundSettings } from './outbound-http.ts';
