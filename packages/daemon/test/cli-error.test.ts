import { afterEach, describe, expect, it } from 'vitest';
import { unexpectedErrorLine } from '../src/cli-error.js';

describe('unexpectedErrorLine (both CLIs print it for an error that is not the user’s)', () => {
  afterEach(() => {
    delete process.env.RESUMEWATCH_DEBUG;
  });

  it('is one line: the name and the first line of the message, and how to see the stack', () => {
    const line = unexpectedErrorLine(new RangeError('first\nsecond'));
    expect(line).toBe('RangeError: first (RESUMEWATCH_DEBUG=1 prints the stack)');
  });

  it('is the stack with RESUMEWATCH_DEBUG=1', () => {
    process.env.RESUMEWATCH_DEBUG = '1';
    const error = new Error('boom');
    expect(unexpectedErrorLine(error)).toBe(error.stack);
  });

  it('is the value itself for a throw of something not an Error', () => {
    expect(unexpectedErrorLine('a string')).toBe('a string');
  });
});
