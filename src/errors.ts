/**
 * A request the service cannot serve right now (the hashing queue is full, the hasher
 * restarted under it, a dependency is down): the HTTP layer answers 503 in the endpoint's
 * error shape with Retry-After, and logs it as a warning, not a failure.
 */
export class ServiceUnavailable extends Error {
  constructor(message: string, readonly retryAfterSeconds = 1) {
    super(message);
    this.name = 'ServiceUnavailable';
  }
}
