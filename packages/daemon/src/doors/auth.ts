import { timingSafeEqual } from 'node:crypto';

/** True when no token is configured or `authorization` is `Bearer <token>`. */
export function authorized(token: string | undefined, authorization: string | undefined): boolean {
  if (token === undefined || token === '') return true;
  if (authorization === undefined) return false;
  const expected = Buffer.from(`Bearer ${token}`);
  const given = Buffer.from(authorization);
  return given.length === expected.length && timingSafeEqual(given, expected);
}
