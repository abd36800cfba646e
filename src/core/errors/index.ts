export { AppError, RequestValidationError, type ErrorCode } from './app-error.ts';
export { registerErrorHandling, validationErrorBody, type ValidationIssue } from './handler.ts';
export { addServerPath, scrubServerPaths, SERVER_PATH } from './server-paths.ts';
