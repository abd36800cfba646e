export { StartRefusal } from './refusal.ts';
export { checkClusterIdentity, STORAGE_MARKER_KEY, type ClusterCheck } from './cluster-identity.ts';
export { checkClock } from './clock.ts';
