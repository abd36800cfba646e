/** A value a query parameter may take. */
export type ParamValue = string | number | boolean | null;
