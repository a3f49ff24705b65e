// The client SDK of the license service: `import { LicenseClient } from '@license-service/client'`.
// Runtime-agnostic (global fetch and WebCrypto only): nothing here imports the server's modules or Node's.
export { LicenseClient, type LicenseClientOptions, type RetryInfo, type RetryOptions } from './client.js';
export {
  ArtefactVerificationError, LicenseApiError, LicenseNetworkError, LicenseSdkError, LicenseTimeoutError, VALIDATE_MESSAGES,
  type ArtefactProblem, type CodedErrorCode, type LicenseErrorCode, type ReleaseErrorCode, type ValidateErrorCode,
} from './errors.js';
export {
  decodeHandoff, DEFAULT_HANDOFF_LIMITS, encodeHandoff, HandoffError,
  type Handoff, type HandoffLimits, type HandoffPayload, type HandoffProblem,
} from './handoff.js';
export { KeySet, type KeySetOptions } from './keyset.js';
export type * from './types.js';
export { receiptDigest, verifyLicenseToken, verifyReceipt, type KeySource, type VerifyOptions } from './verify.js';
