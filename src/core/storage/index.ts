export { LocalLake } from './local-lake.ts';
