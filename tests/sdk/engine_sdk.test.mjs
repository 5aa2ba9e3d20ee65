// The official OpenAI Node SDK, unchanged, against `warmroute engine`: chat and completions,
// streaming and not, usage with cached tokens.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startEngine } from './harness.mjs';

let engine;
let client;
const model = 'sdk-model';

before(async () => {
  engine = await startEngine(['--profile', 'tiny', '--model', model]);
  client = new OpenAI({ baseURL: `${engine.urls[0]}/v1`, apiKey: 'unused', maxRetries: 0 });
});
after(async () => engine.stop());

const system = 'You are a support agent for a bicycle shop. '.repeat(40);

test('lists the served model', async () => {
  const models = await client.models.list();
  assert.deepEqual(models.data.map((m) => m.id), [model]);
});

test('chat completion, non-streaming, then a cached repeat', async () => {
  const req = {
    model,
    max_tokens: 8,
    messages: [{ role: 'system', content: system }, { role: 'user', content: 'Where is my order?' }],
  };
  const first = await client.chat.completions.create(req);
  assert.equal(first.object, 'chat.completion');
  assert.equal(first.choices[0].message.role, 'assistant');
  assert.equal(first.choices[0].finish_reason, 'length');
  assert.equal(first.usage.completion_tokens, 8);
  assert.ok(first.choices[0].message.content.length > 0);
  const second = await client.chat.completions.create(req);
  const n = second.usage.prompt_tokens;
  assert.equal(second.usage.prompt_tokens_details.cached_tokens, Math.floor((n - 1) / 16) * 16);
  assert.equal(second.choices[0].message.content, first.choices[0].message.content);
});

test('chat completion, streaming with usage', async () => {
  const stream = await client.chat.completions.create({
    model,
    max_tokens: 5,
    stream: true,
    stream_options: { include_usage: true },
    messages: [{ role: 'user', content: 'Stream me five tokens.' }],
  });
  let text = '';
  let usage = null;
  let finish = null;
  for await (const chunk of stream) {
    assert.equal(chunk.object, 'chat.completion.chunk');
    if (chunk.usage) usage = chunk.usage;
    for (const choice of chunk.choices) {
      text += choice.delta.content ?? '';
      if (choice.finish_reason) finish = choice.finish_reason;
    }
  }
  assert.equal(finish, 'length');
  assert.ok(text.length > 0);
  assert.equal(usage.completion_tokens, 5);
});

test('completion, streaming and not', async () => {
  const plain = await client.completions.create({ model, prompt: 'Once upon a time', max_tokens: 4 });
  assert.equal(plain.object, 'text_completion');
  assert.equal(plain.usage.completion_tokens, 4);
  const stream = await client.completions.create({ model, prompt: 'Once upon a time', max_tokens: 4, stream: true });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.text ?? '';
  assert.equal(text, plain.choices[0].text);
});

test('errors surface as the SDK error types', async () => {
  await assert.rejects(
    client.chat.completions.create({ model: 'no-such-model', messages: [{ role: 'user', content: 'hi' }] }),
    (err) => err instanceof OpenAI.NotFoundError && err.status === 404,
  );
  await assert.rejects(
    client.chat.completions.create({ model, messages: [] }),
    (err) => err instanceof OpenAI.BadRequestError && err.status === 400,
  );
});
