import type { ColumnType } from 'kysely';

export type Timestamp = ColumnType<Date, Date | string, Date | string>;
export type DefaultTimestamp = ColumnType<Date, Date | string | undefined, Date | string>;
/** jsonb: read as parsed JSON, written as a JSON string. */
export type Json<T> = ColumnType<T, string, string>;
export type NullableJson<T> = ColumnType<T | null, string | null, string | null>;

export type Role = 'owner' | 'admin' | 'writer' | 'reader';
export type PermissionPair = [pattern: string, role: Role];
