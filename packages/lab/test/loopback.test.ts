import { describe, expect, it } from 'vitest';
import { isLoopbackAddress } from '../src/loopback.js';

describe('isLoopbackAddress', () => {
  it('accepts loopback addresses only', () => {
    for (const address of ['127.0.0.1', '127.1.2.3', '::1', '::ffff:127.0.0.1'])
      expect(isLoopbackAddress(address)).toBe(true);
    for (const address of ['10.0.0.1', '172.17.0.2', '::ffff:10.0.0.1', 'fe80::1', '0.0.0.0', '', undefined])
      expect(isLoopbackAddress(address)).toBe(false);
  });
});
