import { z } from 'zod';

const TRUE = new Set(['true', '1', 'yes', 'on']);
const FALSE = new Set(['false', '0', 'no', 'off']);

/** A boolean query parameter, read as FastAPI does (true/false, 1/0, yes/no, on/off). */
export function queryBoolean(defaultValue: boolean) {
  return z
    .union([z.boolean(), z.string()])
    .optional()
    .transform((value, ctx) => {
      if (value === undefined) return defaultValue;
      if (typeof value === 'boolean') return value;
      const v = value.toLowerCase();
      if (TRUE.has(v)) return true;
      if (FALSE.has(v)) return false;
      ctx.addIssue({ code: 'custom', message: 'Input should be a valid boolean, unable to interpret input' });
      return z.NEVER;
    });
}
