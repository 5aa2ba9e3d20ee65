// The official OpenAI Node SDK, unchanged, against `warmroute engine`: chat and completions,
// streaming and not, usage with cached tokens; the Responses API (create, streamed events, a
// follow-up by previous_response_id, retrieve, delete); embeddings.
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

test('responses: create, a streamed follow-up with previous_response_id, retrieve, delete', async () => {
  const instructions = 'You answer questions about bicycles. '.repeat(30);
  const first = await client.responses.create({
    model, instructions, input: 'Which tyre pressure for a road bike?', max_output_tokens: 12,
  });
  assert.match(first.id, /^resp_[0-9a-f]{32}$/);
  assert.equal(first.object, 'response');
  assert.equal(first.status, 'incomplete');
  assert.equal(first.incomplete_details.reason, 'max_output_tokens');
  assert.equal(first.output[0].type, 'message');
  assert.equal(first.output[0].content[0].type, 'output_text');
  assert.ok(first.output_text.length > 0);  // the SDK's own join of the output text
  assert.equal(first.usage.output_tokens, 12);
  assert.equal(first.usage.input_tokens_details.cached_tokens, 0);

  // The follow-up, streamed: events in order, numbered from 0, the usage in the last one.
  const stream = await client.responses.create({
    model, instructions, input: 'And for gravel?', previous_response_id: first.id,
    max_output_tokens: 4, stream: true,
  });
  const types = [];
  let text = '';
  let completed = null;
  for await (const event of stream) {
    assert.equal(event.sequence_number, types.length);
    types.push(event.type);
    if (event.type === 'response.output_text.delta') text += event.delta;
    if (event.type === 'response.completed') completed = event.response;
  }
  assert.deepEqual(types.slice(0, 4), ['response.created', 'response.in_progress',
    'response.output_item.added', 'response.content_part.added']);
  assert.equal(types.filter((t) => t === 'response.output_text.delta').length, 4);
  assert.equal(types.at(-1), 'response.completed');
  assert.equal(completed.previous_response_id, first.id);
  assert.equal(completed.output[0].content[0].text, text);
  assert.equal(completed.usage.output_tokens, 4);
  // The follow-up's prompt extends the first prompt and its answer: its cached prefix covers the
  // whole first prompt.
  assert.ok(completed.usage.input_tokens > first.usage.input_tokens + 12);
  assert.ok(completed.usage.input_tokens_details.cached_tokens >= first.usage.input_tokens - 16);

  const retrieved = await client.responses.retrieve(completed.id);
  assert.equal(retrieved.id, completed.id);
  assert.equal(retrieved.output_text, text);
  await client.responses.delete(completed.id);
  await assert.rejects(client.responses.retrieve(completed.id),
    (err) => err instanceof OpenAI.NotFoundError && err.status === 404);
});

test('responses: a client-chosen request_id is the id', async () => {
  const r = await client.responses.create({ model, input: 'Hi', max_output_tokens: 2,
    request_id: 'resp_from_the_client' });
  assert.equal(r.id, 'resp_from_the_client');
  assert.equal((await client.responses.retrieve('resp_from_the_client')).id, r.id);
});

test('embeddings, float and base64', async () => {
  const input = ['A bicycle has two wheels.', 'A tandem seats two riders.'];
  const floats = await client.embeddings.create({ model, input, encoding_format: 'float' });
  assert.equal(floats.object, 'list');
  assert.equal(floats.data.length, 2);
  assert.equal(floats.data[1].index, 1);
  assert.equal(floats.data[0].embedding.length, 256);
  const norm = floats.data[0].embedding.reduce((sum, x) => sum + x * x, 0);
  assert.ok(Math.abs(norm - 1) < 1e-4);
  assert.ok(floats.usage.prompt_tokens > 0);
  // The SDK asks for base64 by default and decodes it to floats itself.
  const decoded = await client.embeddings.create({ model, input });
  for (let i = 0; i < 256; ++i) {
    assert.ok(Math.abs(decoded.data[0].embedding[i] - floats.data[0].embedding[i]) < 1e-6);
  }
});
