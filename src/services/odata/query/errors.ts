import type { AppError } from '../../../core/errors/index.ts';
import { odataError } from '../errors.ts';

/** Longest accepted text of one query option, in characters. */
export const MAX_OPTION_LENGTH = 8192;
/** Deepest accepted nesting of parentheses, `not`, function calls and operator chains. */
export const MAX_DEPTH = 64;

export type OptionName = '$filter' | '$select' | '$orderby' | '$apply';

/** Which option a text came from: decides the error code and the prefix of every message about it. */
export interface OptionContext {
  option: OptionName;
  code: 'INVALID_FILTER' | 'INVALID_SELECT' | 'INVALID_ORDERBY' | 'INVALID_APPLY';
}

export const FILTER: OptionContext = { option: '$filter', code: 'INVALID_FILTER' };
export const SELECT: OptionContext = { option: '$select', code: 'INVALID_SELECT' };
export const ORDERBY: OptionContext = { option: '$orderby', code: 'INVALID_ORDERBY' };
export const APPLY: OptionContext = { option: '$apply', code: 'INVALID_APPLY' };

function optionError(code: OptionContext['code'] | 'FILTER_TYPE_MISMATCH', ctx: OptionContext, position: number, message: string): AppError {
  return odataError(code, `${ctx.option}: at ${position}: ${message}`, { extra: { position, option: ctx.option } });
}

/** A malformed or unsupported piece of an option (its own code: INVALID_FILTER, INVALID_APPLY, …). */
export function invalid(ctx: OptionContext, position: number, message: string): AppError {
  return optionError(ctx.code, ctx, position, message);
}

/** A well-formed expression whose operand types do not fit together (in $filter or in $apply's filter()). */
export function typeMismatch(ctx: OptionContext, position: number, message: string): AppError {
  return optionError('FILTER_TYPE_MISMATCH', ctx, position, message);
}
