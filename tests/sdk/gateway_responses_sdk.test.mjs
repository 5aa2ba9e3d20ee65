// The official OpenAI Node SDK's Responses API and embeddings, unchanged, through two replicas of
// `warmroute serve` in front of the same three emulated engines: a response created through one
// gateway is continued (previous_response_id), retrieved and deleted through the other, which
// never saw it — each time on the replica that stored it — streaming and not.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startEngine, startGateway } from './harness.mjs';

let engine;
let gatewayA;
let gatewayB;
let a;
let b;
const model = 'sdk-model';

before(async () => {
  engine = await startEngine(['--profile', 'tiny', '--model', model, '--replicas', '3']);
  gatewayA = await startGateway(engine.urls);
  gatewayB = await startGateway(engine.urls);
  a = new OpenAI({ baseURL: `${gatewayA.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  b = new OpenAI({ baseURL: `${gatewayB.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  for (const client of [a, b]) {
    for (let i = 0; i < 50; i++) {
      if ((await client.models.list()).data.length > 0) break;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
});
after(async () => {
  await gatewayB.stop();
  await gatewayA.stop();
  await engine.stop();
});

const instructions = 'You are a support agent for a bicycle shop. '.repeat(40);

test('a response created through one gateway is continued through the other on its replica',
  async () => {
    const first = await a.responses
      .create({ model, instructions, input: 'Where is my order?', max_output_tokens: 6 })
      .withResponse();
    assert.equal(first.data.object, 'response');
    assert.ok(['completed', 'incomplete'].includes(first.data.status));  // cut at max_output_tokens
    assert.ok(first.data.output_text.length > 0);
    const home = first.response.headers.get('x-warmroute-backend');
    const next = await b.responses
      // The instructions are not carried over (as in vLLM): sent again, the stored turn is the
      // prompt's prefix.
      .create({ model, instructions, previous_response_id: first.data.id,
        input: 'And when will it ship?', max_output_tokens: 6 })
      .withResponse();
    assert.equal(next.response.headers.get('x-warmroute-backend'), home);
    assert.equal(next.data.previous_response_id, first.data.id);
    // The earlier turn is this one's prefix, cached on that replica.
    assert.ok(next.data.usage.input_tokens_details.cached_tokens > 0);
    assert.ok(next.data.usage.input_tokens > first.data.usage.input_tokens);

    const fetched = await b.responses.retrieve(first.data.id);
    assert.equal(fetched.id, first.data.id);
    await a.responses.delete(first.data.id);
    await assert.rejects(b.responses.retrieve(first.data.id), OpenAI.NotFoundError);
  });

test('a streamed response, then its stored copy through the other gateway', async () => {
  const stream = await a.responses.create({ model, instructions, input: 'Stream please.',
    max_output_tokens: 5, stream: true });
  let text = '';
  let completed = null;
  for await (const event of stream) {
    if (event.type === 'response.output_text.delta') text += event.delta;
    if (event.type === 'response.completed') completed = event.response;
  }
  assert.ok(completed);
  assert.equal(completed.output_text ?? completed.output[0].content[0].text, text);
  assert.ok(completed.usage.input_tokens > 0);
  const fetched = await b.responses.retrieve(completed.id);
  assert.equal(fetched.id, completed.id);
});

test('embeddings through the gateway', async () => {
  const result = await b.embeddings.create({ model, input: ['first text', 'second text'] });
  assert.equal(result.data.length, 2);
  assert.ok(result.data[0].embedding.length > 0);
  assert.ok(result.usage.prompt_tokens > 0);
});
