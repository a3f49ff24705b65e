import t from 'tap';
import { Progress, type Counts } from '../../src/cli/licensectl/progress.js';
import { waitFor } from '../helpers/wait.js';

// The import's progress on stderr: on a terminal a bar redrawn in place (carriage return,
// erase to the end of the line), ended with a line break; elsewhere plain lines.

function fakeStream(tty: boolean): { stream: NodeJS.WriteStream; written: string[] } {
  const written: string[] = [];
  const stream = { isTTY: tty, write: (s: string) => written.push(s) > 0 } as unknown as NodeJS.WriteStream;
  return { stream, written };
}

t.test('on a terminal: a bar redrawn in place, its last state kept at the end', async (t) => {
  const { stream, written } = fakeStream(true);
  // half the file read, 6 rows in it, 3 of them done: a quarter done
  const counts: Counts = { created: 2, rejected: 1, read: 6, bytes: 50, size: 100 };
  const progress = new Progress(counts, stream);
  await waitFor('a first redraw', () => written.length > 0);
  // eslint-disable-next-line no-control-regex -- the escape that erases the rest of the line is the point
  t.match(written[0], /^\r\[#{8}-{22}\] 25% 3 rows: 2 created, 1 rejected, \d+ rows\/s\u001b\[K$/);
  counts.created = 9;
  counts.read = 10;
  counts.bytes = 100;
  progress.stop();
  t.match(written.at(-2), /^\r\[#{30}\] 100% 10 rows: 9 created, 1 rejected/);
  t.equal(written.at(-1), '\n');
});

t.test('elsewhere: no redraws, nothing for a short import', async (t) => {
  const { stream, written } = fakeStream(false);
  const progress = new Progress({ created: 1, rejected: 0, read: 1, bytes: 1, size: 1 }, stream);
  progress.stop();
  t.same(written, []);
});
