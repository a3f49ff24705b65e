// The time in a keyset cursor (the admin lists, the audit log, the ledger): microseconds
// since the epoch, Postgres's own precision, so that a page ends exactly where its last row
// sorts. The two directions are kept together: a cursor read back at another precision
// would repeat or skip the rows of its instant.

/** SQL: a timestamptz column as the int8 of microseconds a cursor carries. */
export function microsOf(column: string): string {
  return `(extract(epoch from ${column}) * 1000000)::int8`;
}

/** SQL: the int8 parameter `$n` of a cursor's microseconds as the timestamptz it came from. */
export function instantOfMicros(n: number): string {
  return `timestamptz 'epoch' + $${n}::int8 * interval '1 microsecond'`;
}
