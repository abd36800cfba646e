import type { Logger } from '../src/core/logger.ts';

export interface LogEntry {
  level: 'debug' | 'info' | 'warn' | 'error';
  fields: Record<string, unknown>;
  message: string;
}

/** A logger that keeps what it is given, for tests that check what background work reports. */
export function recordingLogger(): { log: Logger; entries: LogEntry[] } {
  const entries: LogEntry[] = [];
  const at =
    (level: LogEntry['level']) =>
    (fields: object, message: string): void =>
      void entries.push({ level, fields: fields as Record<string, unknown>, message });
  const log: Logger = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: () => log };
  return { log, entries };
}
