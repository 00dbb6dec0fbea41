/** `vi.waitFor` options for what arrives over real loopback HTTP: generous, as tests run on loaded machines. */
export const WAIT = { timeout: 15_000, interval: 10 };
