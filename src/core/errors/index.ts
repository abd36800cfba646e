export { AppError, appError, defineErrors, isAppError, RequestValidationError, type AppErrorOptions, type ErrorCode, type ErrorStatuses } from './app-error.ts';
export { CORE_ERRORS } from './codes.ts';
export { clientErrorHandler, frameworkErrors, registerErrorHandling, validationErrorBody, type ValidationIssue } from './handler.ts';
export { addServerPath, scrubServerPaths, SERVER_PATH } from './server-paths.ts';
