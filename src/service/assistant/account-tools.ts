import * as z from 'zod';
import { ASSISTANT_TEXT } from '../contract/assistant.js';
import { ImageFields, ImageRequest } from '../contract/images.js';
import { LIMITS } from '../contract/limits.js';
import { rule } from '../contract/problems.js';
import { topUpUrl } from '../contract/settings.js';
import type { ImageJob } from '../resources/images/job.js';
import { contractInput, parseInput, toToolResult, tool, valueResult, type ToolContext, type ToolDefinition } from './tool-runner.js';
import { idempotencyKey, maxCredits, signalOf } from './clip-tools.js';
import type { Made } from './spending.js';
import { MAX_TOOL_WAIT_SECONDS } from './wait.js';

const ImageJobView = z.looseObject({ id: z.number(), status: z.string(), images: z.array(z.looseObject({ id: z.number(), url: z.string() })) });

/** create_image's arguments: POST /v1/images' description and look, picked from the contract, and the spending guard rails. */
const CreateImage = z.object({
  description: ImageFields.shape.description.unwrap().unwrap().min(1).meta({ description: `What the image shows (up to ${LIMITS.imageDescriptionChars} characters).` }),
  ...ImageFields.pick({ quality: true, count: true, aspect_ratio: true }).shape,
  max_credits: maxCredits,
  idempotency_key: idempotencyKey,
});
const GetImage = z.object({ image_job_id: rule(z.int().min(1), { code: 'invalid_parameter', detail: () => 'image_job_id is the integer id create_image returned.' }).meta({ description: 'The id create_image returned.' }) });

/** get_account, create_image, get_image and get_topup_link, through the same commands as `/v1`. */
export const ACCOUNT_TOOLS: readonly ToolDefinition[] = [
  tool(
    'get_account',
    {
      title: 'Get the account',
      description: `The balance in credits, and this assistant's spending: its daily limit, what it used in the last ${ASSISTANT_TEXT.dailyWindow}, what remains, and its running clips.`,
      inputSchema: z.object({}),
      outputSchema: z.looseObject({
        balance: z.number(),
        topped_up: z.boolean(),
        assistant: z.object({ daily_limit: z.number(), used_today: z.number(), remaining_today: z.number(), running_clips: z.number(), max_running_clips: z.number(), pays: z.literal('base prices') }),
      }),
      annotations: { readOnlyHint: true },
    },
    async (ctx) => {
      const limit = ctx.spending.dailyLimit(ctx.assistant, ctx.caller.account);
      const used = ctx.spending.usedToday(ctx.assistant);
      const mine = {
        daily_limit: limit,
        used_today: used,
        remaining_today: Math.max(0, limit - used),
        running_clips: ctx.spending.runningClips(ctx.assistant),
        max_running_clips: LIMITS.assistant.concurrentClips,
        pays: 'base prices' as const,
      };
      return toToolResult({ ok: true, value: { ...ctx.parts.account.view(ctx.caller), assistant: mine } });
    },
  ),

  tool(
    'create_image',
    {
      title: 'Create an image',
      description: `Makes 1 or 4 images from a description and waits up to ${MAX_TOOL_WAIT_SECONDS} s for them. Price: ${ASSISTANT_TEXT.imagePrices}. The images' ids can be given to create_clip as image_ids.`,
      inputSchema: contractInput(CreateImage),
      outputSchema: ImageJobView,
      annotations: { destructiveHint: false, openWorldHint: false },
    },
    async (ctx, raw, extra) => {
      const { max_credits: max, idempotency_key: key, ...rest } = parseInput(CreateImage, raw);
      // The contract's own rules and price, as POST /v1/images runs them.
      const command = parseInput(ImageRequest, rest);
      const answer = await ctx.spending.spend({ assistant: ctx.assistant, account: ctx.caller.account }, { tool: 'create_image', args: rest, idempotencyKey: key, kind: 'image', price: command.price, maxCredits: max }, async (): Promise<Made> => {
        const made = await ctx.parts.images.create(ctx.caller, command);
        return { id: made.id, value: made };
      });
      if (!answer.ok) return toToolResult(answer);
      const id = answer.value.id as number;
      await waitForImage(ctx, id, signalOf(extra));
      return valueResult(ctx.parts.images.view(ctx.parts.images.own(ctx.caller, id)));
    },
  ),

  tool(
    'get_image',
    {
      title: 'Get an image job',
      description: `Returns an image job, waiting up to ${MAX_TOOL_WAIT_SECONDS} s for it to end first.`,
      inputSchema: contractInput(GetImage),
      outputSchema: ImageJobView,
      annotations: { readOnlyHint: true },
    },
    async (ctx, raw, extra) => {
      const { image_job_id: id } = parseInput(GetImage, raw);
      ctx.parts.images.own(ctx.caller, id);
      await waitForImage(ctx, id, signalOf(extra));
      return valueResult(ctx.parts.images.view(ctx.parts.images.own(ctx.caller, id)));
    },
  ),

  tool(
    'get_topup_link',
    {
      title: 'Get the top-up link',
      description: 'A link where the person (not the assistant) adds credits to the account. Give it to them when the balance is low.',
      inputSchema: z.object({}),
      outputSchema: z.object({ url: z.string(), balance: z.number() }),
      annotations: { readOnlyHint: true },
    },
    async (ctx) => toToolResult({ ok: true, value: { url: topUpUrl(ctx.parts.origin), balance: ctx.caller.account.balance } }),
  ),
];

/** Waits (on the service's clock, woken by the job's `ended` event) up to 45 s for an image job to end. */
async function waitForImage({ parts, caller }: ToolContext, id: number, signal: AbortSignal | undefined): Promise<ImageJob | void> {
  const job = parts.state.images.get(caller.account.id, id);
  if (!job || signal?.aborted) return;
  await Promise.race([
    parts.state.images.waitFor(job, MAX_TOOL_WAIT_SECONDS * 1000),
    new Promise<void>((resolve) => signal?.addEventListener('abort', () => resolve(), { once: true })),
  ]);
}
