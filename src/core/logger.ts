type LogFn = (fields: object, message: string) => void;

/** What Lakeport logs through: the part of pino's logger it uses (Fastify's `app.log` is one). */
export interface Logger {
  debug: LogFn;
  info: LogFn;
  warn: LogFn;
  error: LogFn;
  child(bindings: Record<string, unknown>): Logger;
}

/** Logs nothing: for unit tests that construct pieces directly (the app always passes its own). */
export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => silentLogger };
