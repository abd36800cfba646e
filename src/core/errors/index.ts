export { AppError, RequestValidationError, type ErrorCode } from './app-error.ts';
export { registerErrorHandling, validationErrorBody, type ValidationIssue } from './handler.ts';
