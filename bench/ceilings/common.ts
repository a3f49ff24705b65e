import uWS from 'uWebSockets.js';

// The ceilings share the service's way of reading a body (copy the chunk, onAborted, one
// cork for status, header and body), so each level adds only its own piece of work.

export type BodyHandler = (body: Buffer, res: uWS.HttpResponse, state: { aborted: boolean }) => void;

export function send(res: uWS.HttpResponse, state: { aborted: boolean }, status: string, body: string): void {
  if (state.aborted) return;
  res.cork(() => {
    res.writeStatus(status).writeHeader('Content-Type', 'application/json; charset=utf-8').end(body);
  });
}

export function serve(path: string, onBody: BodyHandler): void {
  const port = Number(process.env.PORT ?? 9001);
  uWS.App()
    .post(path, (res) => {
      const state = { aborted: false };
      res.onAborted(() => {
        state.aborted = true;
      });
      let chunks: Buffer[] | null = null;
      res.onData((chunk, isLast) => {
        const copy = Buffer.from(new Uint8Array(chunk));
        if (isLast) onBody(chunks === null ? copy : Buffer.concat([...chunks, copy]), res, state);
        else (chunks ??= []).push(copy);
      });
    })
    .listen('127.0.0.1', port, (socket) => {
      if (!socket) {
        process.stderr.write(`ceiling: cannot listen on ${port}\n`);
        process.exit(1);
      }
      process.stdout.write(`ceiling listening on ${port}\n`);
    });
}
