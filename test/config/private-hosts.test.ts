import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';

const load = (value: string) =>
  loadConfig({ env: {}, argv: ['--allow-private-hosts', value] }).config.allowPrivateHosts;

describe('--allow-private-hosts', () => {
  it.each([
    ['ollama=localhost:11434', { ollama: ['localhost:11434'] }],
    [
      'ollama=LocalHost:11434;browser-capture=127.0.0.1:9222,[::1]:9222',
      { ollama: ['localhost:11434'], 'browser-capture': ['127.0.0.1:9222', '[::1]:9222'] },
    ],
    [' a = h1:1 ; a = h2.lan:2 ', { a: ['h1:1', 'h2.lan:2'] }],
    ['{"llm-chat":["10.0.0.5:8000"]}', { 'llm-chat': ['10.0.0.5:8000'] }],
    ['', {}],
  ])('parses %j', (value, expected) => {
    expect(load(value)).toEqual(expected);
  });

  it.each([
    ['ollama=localhost', '"localhost" is not host:port'],
    ['ollama=localhost:0', '"localhost:0" is not host:port'],
    ['ollama=localhost:70000', '"localhost:70000" has a port above 65535'],
    ['x=999.1.1.1:5', '"999.1.1.1:5" is not a valid IPv4 address'],
    ['x=0.0.0.0:80', '"0.0.0.0:80" is the unspecified address'],
    ['x=[::]:80', '"[::]:80" is the unspecified address'],
    ['x=http://h:80', '"http://h:80" is not host:port'],
    ['Ollama=localhost:1', 'tool name "Ollama" must match'],
    ['ollama', 'ollama (expected tool=host:port)'],
    ['ollama=', 'each tool needs at least one host:port'],
  ])('refuses %j naming the bad value', (value, message) => {
    expect(() => load(value)).toThrow(message);
  });
});

const shares = (value: string) => loadConfig({ env: {}, argv: ['--share-secrets', value] }).config.shareSecrets;

describe('--share-secrets', () => {
  it.each([
    ['LLM_API_KEY=summarize', { LLM_API_KEY: ['summarize'] }],
    [
      'LLM_API_KEY=summarize,translate;WEATHER_KEY=agents',
      { LLM_API_KEY: ['summarize', 'translate'], WEATHER_KEY: ['agents'] },
    ],
    [' K = a ; K = b ', { K: ['a', 'b'] }],
    ['{"K":["agents"]}', { K: ['agents'] }],
    ['', {}],
  ])('parses %j', (value, expected) => {
    expect(shares(value)).toEqual(expected);
  });

  it('defaults to nothing shared', () => {
    expect(loadConfig({ env: {}, argv: [] }).config.shareSecrets).toEqual({});
  });

  it.each([
    ['K', 'K (expected NAME=tool)'],
    ['K=', 'each secret needs at least one tool name or "agents"'],
    ['K=Summarize', '"Summarize" is neither "agents" nor a tool name'],
    ['9K=agents', 'secret name "9K" must match'],
    ['{"K":"agents"}', 'expected array'],
  ])('refuses %j naming the bad value', (value, message) => {
    expect(() => shares(value)).toThrow(message);
  });
});
