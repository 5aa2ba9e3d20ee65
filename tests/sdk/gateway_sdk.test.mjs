// The official OpenAI Node SDK, unchanged, through `warmroute serve` in front of two emulated
// replicas: chat and completions, streaming and not; a repeated prompt lands where it is cached;
// a stream that did not ask for usage gets none (the gateway's own include_usage is dropped);
// errors keep their SDK types.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startEngine, startGateway } from './harness.mjs';

let engine;
let gateway;
let client;
const model = 'sdk-model';

before(async () => {
  engine = await startEngine(['--profile', 'tiny', '--model', model, '--replicas', '2']);
  gateway = await startGateway(engine.urls);
  client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  // The gateway learns the models from the replicas once its first probe has succeeded.
  for (let i = 0; i < 50; i++) {
    const models = await client.models.list();
    if (models.data.length > 0) break;
    await new Promise((r) => setTimeout(r, 100));
  }
});
after(async () => {
  await gateway.stop();
  await engine.stop();
});

const system = 'You are a support agent for a bicycle shop. '.repeat(40);

test('lists the replicas\' model', async () => {
  const models = await client.models.list();
  assert.deepEqual(models.data.map((m) => m.id), [model]);
});

test('chat completion through the gateway, then a repeat served from the same replica\'s cache',
  async () => {
    const req = {
      model,
      max_tokens: 8,
      messages: [{ role: 'system', content: system }, { role: 'user', content: 'Where is my order?' }],
    };
    const first = await client.chat.completions.create(req).withResponse();
    assert.equal(first.data.object, 'chat.completion');
    assert.equal(first.data.usage.completion_tokens, 8);
    const backend = first.response.headers.get('x-warmroute-backend');
    assert.ok(backend);
    const second = await client.chat.completions.create(req).withResponse();
    assert.equal(second.response.headers.get('x-warmroute-backend'), backend);
    assert.equal(second.response.headers.get('x-warmroute-reason'), 'cache_hit');
    const n = second.data.usage.prompt_tokens;
    assert.equal(second.data.usage.prompt_tokens_details.cached_tokens, Math.floor((n - 1) / 16) * 16);
    assert.equal(second.data.choices[0].message.content, first.data.choices[0].message.content);
  });

test('streaming without usage: no usage chunk reaches the client', async () => {
  const stream = await client.chat.completions.create({
    model,
    max_tokens: 5,
    stream: true,
    messages: [{ role: 'user', content: 'Stream me five tokens.' }],
  });
  let text = '';
  let chunks = 0;
  for await (const chunk of stream) {
    chunks += 1;
    assert.equal(chunk.object, 'chat.completion.chunk');
    assert.ok(!chunk.usage, 'no usage chunk');
    assert.ok(chunk.choices.length > 0, 'every chunk has a choice');
    text += chunk.choices[0].delta.content ?? '';
  }
  assert.ok(chunks >= 5);
  assert.ok(text.length > 0);
});

test('streaming with usage: exactly one usage chunk, with cached tokens', async () => {
  const stream = await client.chat.completions.create({
    model,
    max_tokens: 3,
    stream: true,
    stream_options: { include_usage: true },
    messages: [{ role: 'system', content: system }, { role: 'user', content: 'Stream.' }],
  });
  const usages = [];
  for await (const chunk of stream) if (chunk.usage) usages.push(chunk.usage);
  assert.equal(usages.length, 1);
  assert.equal(usages[0].completion_tokens, 3);
  assert.ok(usages[0].prompt_tokens_details.cached_tokens >= 0);
});

test('completion, streaming and not, give the same text', async () => {
  const plain = await client.completions.create({ model, prompt: 'Once upon a time', max_tokens: 4 });
  assert.equal(plain.object, 'text_completion');
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
