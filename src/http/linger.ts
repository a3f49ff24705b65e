import type uWS from 'uWebSockets.js';
import { JSON_TYPE, type Answers, type RequestState } from './answer.js';
import type { Reply } from './reply.js';

// The 413 to a body over the limit, and the lingering close that follows it. One concern:
// from the refusal to the connection's end, a request is in one state (state.lingering)
// that only these functions enter and leave. Built once per server (lingeringOf).

/**
 * Lingering close, as nginx does it: a 413 is sent at once with "Connection: close", then
 * the rest of the upload is read and dropped until it ends, for at most this many bytes or
 * milliseconds, and only then is the connection closed. Closing at once would reset the
 * connection under a client still sending, which then sees EPIPE instead of the 413.
 */
const LINGER_BYTES = 8 << 20;
const LINGER_MS = 2000;

export interface Lingering {
  /** Sends a 413 while the upload goes on, then drops the rest of it (LINGER_*). */
  refuseBody(res: uWS.HttpResponse, state: RequestState, out: Reply): void;
  /**
   * Ends a lingering 413: once the upload is over, the response is completed (the client
   * reads "Connection: close" and closes); past the caps the connection is cut.
   */
  endLinger(res: uWS.HttpResponse, state: RequestState, uploadOver: boolean): void;
  /** A chunk of the upload after the 413: dropped, and the linger ended at its last one or past LINGER_BYTES. */
  discard(res: uWS.HttpResponse, state: RequestState, chunk: ArrayBuffer, isLast: boolean): void;
}

/** finish: the request is over (it no longer holds a drain). */
export function lingeringOf(writeHead: Answers['writeHead'], finish: () => void): Lingering {
  function refuseBody(res: uWS.HttpResponse, state: RequestState, out: Reply): void {
    state.done = true;
    state.lingering = true;
    res.cork(() => {
      writeHead(res, state, out.status);
      res.writeHeader('Content-Type', JSON_TYPE).writeHeader('Connection', 'close');
      res.write(out.body);
    });
    state.lingerTimer = setTimeout(() => endLinger(res, state, false), LINGER_MS);
  }

  function endLinger(res: uWS.HttpResponse, state: RequestState, uploadOver: boolean): void {
    if (!state.lingering) return;
    state.lingering = false;
    if (state.lingerTimer) clearTimeout(state.lingerTimer);
    if (!state.gone) {
      if (uploadOver) res.cork(() => res.end());
      else res.close();
    }
    finish();
  }

  function discard(res: uWS.HttpResponse, state: RequestState, chunk: ArrayBuffer, isLast: boolean): void {
    state.discarded += chunk.byteLength;
    if (isLast || state.discarded > LINGER_BYTES) endLinger(res, state, isLast);
  }

  return { refuseBody, endLinger, discard };
}
