import { timingSafeEqual } from 'node:crypto';

/** The last token checked and the header it expects, made once rather than per request. */
let lastToken: string | undefined;
let lastExpected = Buffer.alloc(0);

/** True when no token is configured or `authorization` is `Bearer <token>`. */
export function authorized(token: string | undefined, authorization: string | undefined): boolean {
  if (token === undefined || token === '') return true;
  if (authorization === undefined) return false;
  if (token !== lastToken) {
    lastExpected = Buffer.from(`Bearer ${token}`);
    lastToken = token;
  }
  const given = Buffer.from(authorization);
  return given.length === lastExpected.length && timingSafeEqual(given, lastExpected);
}
