// The client SDK of the license service: `import { LicenseClient } from 'license-sign-token-service/sdk'`.
// Runtime-agnostic (global fetch only): nothing here imports the server's modules or Node's.
export { LicenseClient, type LicenseClientOptions, type RetryInfo, type RetryOptions } from './client.js';
export {
  LicenseApiError, LicenseNetworkError, LicenseSdkError, LicenseTimeoutError, VALIDATE_MESSAGES,
  type CodedErrorCode, type LicenseErrorCode, type ValidateErrorCode,
} from './errors.js';
export {
  decodeHandoff, DEFAULT_HANDOFF_LIMITS, encodeHandoff, HandoffError,
  type Handoff, type HandoffLimits, type HandoffPayload, type HandoffProblem,
} from './handoff.js';
export type * from './types.js';
