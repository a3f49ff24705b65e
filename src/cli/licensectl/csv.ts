// CSV as RFC 4180 writes it, read a chunk at a time so a file of any size streams through:
// fields separated by commas, records by CRLF, LF or CR; a field in double quotes may hold
// commas, line breaks and doubled quotes (""). A byte order mark opening the text is
// dropped, and so are empty lines. Lenient where RFC 4180 is strict: a quote inside an
// unquoted field, or text after a closing quote, is kept as it is.

/** One record and the line of the text it starts on (1-based). */
export interface CsvRecord {
  fields: string[];
  line: number;
  /** set when the text ended inside a quoted field */
  error?: string;
}

const enum State { FieldStart, Unquoted, Quoted, QuoteInQuoted, AfterCr }

export class CsvParser {
  private state = State.FieldStart;
  private field = '';
  private fields: string[] = [];
  /** a record holding one empty field is an empty line unless that field was quoted */
  private quotedField = false;
  private line = 1;
  private recordLine = 1;
  private started = false;

  /** The records the chunk completes (a record split across chunks comes with the chunk that ends it). */
  push(chunk: string): CsvRecord[] {
    const out: CsvRecord[] = [];
    let i = 0;
    if (!this.started && chunk.length > 0) {
      this.started = true;
      if (chunk.charCodeAt(0) === 0xfeff) i = 1;
    }
    for (; i < chunk.length; i++) {
      const c = chunk[i] as string;
      if (this.state === State.AfterCr) {
        this.state = State.FieldStart;
        if (c === '\n') continue; // CRLF: one break
      }
      switch (this.state) {
        case State.Quoted:
          if (c === '"') this.state = State.QuoteInQuoted;
          else {
            if (c === '\n' || (c === '\r' && chunk[i + 1] !== '\n')) this.line++;
            this.field += c;
          }
          break;
        case State.QuoteInQuoted:
          if (c === '"') {
            this.field += '"';
            this.state = State.Quoted;
            break;
          }
          this.state = State.Unquoted;
          this.delimitOrAppend(c, out);
          break;
        case State.FieldStart:
          if (c === '"') {
            this.state = State.Quoted;
            this.quotedField = true;
            break;
          }
          this.state = State.Unquoted;
          this.delimitOrAppend(c, out);
          break;
        default:
          this.delimitOrAppend(c, out);
      }
    }
    return out;
  }

  /** What the text's end completes: the last record without a line break, or an unterminated quoted field. */
  end(): CsvRecord[] {
    const out: CsvRecord[] = [];
    if (this.state === State.Quoted) {
      this.fields.push(this.field);
      out.push({ fields: this.fields, line: this.recordLine, error: 'unterminated quoted field' });
    } else if (this.state !== State.AfterCr && (this.field !== '' || this.fields.length > 0 || this.quotedField)) {
      this.endRecord(out);
    }
    this.fields = [];
    this.field = '';
    this.state = State.FieldStart;
    return out;
  }

  private delimitOrAppend(c: string, out: CsvRecord[]): void {
    if (c === ',') {
      this.fields.push(this.field);
      this.field = '';
      this.state = State.FieldStart;
    } else if (c === '\n' || c === '\r') {
      this.endRecord(out);
      this.line++;
      this.recordLine = this.line;
      this.state = c === '\r' ? State.AfterCr : State.FieldStart;
    } else {
      this.field += c;
    }
  }

  private endRecord(out: CsvRecord[]): void {
    this.fields.push(this.field);
    const empty = this.fields.length === 1 && this.field === '' && !this.quotedField;
    if (!empty) out.push({ fields: this.fields, line: this.recordLine });
    this.fields = [];
    this.field = '';
    this.quotedField = false;
  }
}

/** A field as CSV: quoted when it holds a comma, quote or line break, is empty, or opens with a BOM. */
export function csvField(value: string): string {
  return value === '' || /[",\r\n]/.test(value) || value.charCodeAt(0) === 0xfeff ? `"${value.replaceAll('"', '""')}"` : value;
}

/** One record as a CSV line (CRLF-terminated). A record of one empty field is written "" so it is not an empty line. */
export function csvLine(fields: readonly string[]): string {
  return `${fields.map((f, i) => (f === '' && !(fields.length === 1 && i === 0) ? '' : csvField(f))).join(',')}\r\n`;
}
