// The server's clock, as the browser can know it: each API answer carries a
// Date header, and times the server recorded are shown relative to the
// server's now, so a browser whose clock is off does not show "in 6 s" for
// something that just happened.

let offsetMs = 0;

/** Learns the server's clock from an answer's Date header (1 s resolution). */
export function observeServerDate(header: string | null, receivedAt: number = Date.now()): void {
  if (!header) return;
  const server = Date.parse(header);
  if (Number.isNaN(server)) return;
  // The header is rounded down to the second and was sent before it
  // arrived: only a difference beyond that is the clocks disagreeing.
  const diff = server + 500 - receivedAt;
  offsetMs = Math.abs(diff) > 2000 ? diff : 0;
}

/** Now on the server's clock. */
export function serverNow(): number {
  return Date.now() + offsetMs;
}
