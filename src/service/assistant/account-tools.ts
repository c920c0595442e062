import type { McpServer } from '@modelcontextprotocol/server';
import * as z from 'zod';
import { createImage, getImage } from '../images/operations.js';
import { IMAGE_RATIOS } from '../images/validate.js';
import { imagePrice } from '../contract/pricing.js';
import { getAccount } from '../videos/operations.js';
import { idempotencyKey, signalOf } from './clip-tools.js';
import { fromResult, toToolResult, type ToolContext } from './context.js';
import { ASSISTANT_LIMITS, type Made } from './spending.js';
import { MAX_TOOL_WAIT_SECONDS } from './wait.js';

const ImageJob = z.looseObject({ id: z.number(), status: z.string(), images: z.array(z.looseObject({ id: z.number(), url: z.string() })) });

/** get_account, create_image, get_image and get_topup_link, through the same operations as `/v1`. */
export function registerAccountTools(server: McpServer, ctx: ToolContext): void {
  const { service, spending, caller, assistant } = ctx;

  server.registerTool(
    'get_account',
    {
      title: 'Get the account',
      description: 'The balance in credits, and this assistant\'s spending: its daily limit, what it used in the last 24 hours, what remains, and its running clips.',
      inputSchema: z.object({}),
      outputSchema: z.looseObject({
        balance: z.number(),
        topped_up: z.boolean(),
        assistant: z.object({ daily_limit: z.number(), used_today: z.number(), remaining_today: z.number(), running_clips: z.number(), max_running_clips: z.number(), pays: z.literal('base prices') }),
      }),
      annotations: { readOnlyHint: true },
    },
    async () => {
      const account = fromResult(getAccount(service, caller));
      if (!account.ok) return toToolResult(account);
      const limit = spending.dailyLimit(assistant, caller.account);
      const used = spending.usedToday(assistant);
      const mine = {
        daily_limit: limit,
        used_today: used,
        remaining_today: Math.max(0, limit - used),
        running_clips: spending.runningClips(assistant),
        max_running_clips: ASSISTANT_LIMITS.concurrentClips,
        pays: 'base prices' as const,
      };
      return toToolResult({ ok: true, value: { ...account.value, assistant: mine } });
    },
  );

  server.registerTool(
    'create_image',
    {
      title: 'Create an image',
      description: `Makes 1 or 4 images from a description and waits up to ${MAX_TOOL_WAIT_SECONDS} s for them. Price: standard 2 credits (4 variations 7), hd 4 (4 variations 14). The images' ids can be given to create_clip as image_ids.`,
      inputSchema: z.object({
        description: z.string().min(1).max(1000).describe('What the image shows.'),
        quality: z.enum(['standard', 'hd']).optional().describe('Default standard.'),
        count: z.union([z.literal(1), z.literal(4)]).optional().describe('1 image or 4 variations. Default 1.'),
        aspect_ratio: z.enum(IMAGE_RATIOS).optional(),
        max_credits: z.number().int().min(0).describe('The most credits this call may spend; refused (nothing charged) if the images cost more.'),
        idempotency_key: idempotencyKey,
      }),
      outputSchema: ImageJob,
      annotations: { destructiveHint: false, openWorldHint: false },
    },
    async (args, extra) => {
      const { max_credits: maxCredits, idempotency_key: key, ...rest } = args;
      const quality = args.quality ?? 'standard';
      const count = args.count ?? 1;
      const price = imagePrice({ type: 'image', quality, count });
      const answer = await spending.spend({ assistant, account: caller.account }, { tool: 'create_image', args: rest, idempotencyKey: key, kind: 'image', price, maxCredits }, async (beforeCommit): Promise<Made> => {
        const body = { description: args.description, quality, count, ...(args.aspect_ratio ? { aspect_ratio: args.aspect_ratio } : {}) };
        const created = fromResult(await createImage(service, caller, body, undefined, { beforeCommit }));
        return created.ok ? { ok: true, id: created.value.id as number, value: created.value } : created;
      });
      if (!answer.ok) return toToolResult(answer);
      const job = service.images.get(caller.account.id, answer.value.id as number);
      if (job) await waitForImage(ctx, job.id, signalOf(extra));
      return toToolResult(fromResult(await getImage(service, caller, String(answer.value.id))));
    },
  );

  server.registerTool(
    'get_image',
    {
      title: 'Get an image job',
      description: `Returns an image job, waiting up to ${MAX_TOOL_WAIT_SECONDS} s for it to end first.`,
      inputSchema: z.object({ image_job_id: z.number().int().positive().describe('The id create_image returned.') }),
      outputSchema: ImageJob,
      annotations: { readOnlyHint: true },
    },
    async (args, extra) => {
      const found = await getImage(service, caller, String(args.image_job_id));
      if (found.status !== 200) return toToolResult(fromResult(found));
      await waitForImage(ctx, args.image_job_id, signalOf(extra));
      return toToolResult(fromResult(await getImage(service, caller, String(args.image_job_id))));
    },
  );

  server.registerTool(
    'get_topup_link',
    {
      title: 'Get the top-up link',
      description: 'A link where the person (not the assistant) adds credits to the account. Give it to them when the balance is low.',
      inputSchema: z.object({}),
      outputSchema: z.object({ url: z.string(), balance: z.number() }),
      annotations: { readOnlyHint: true },
    },
    async () => toToolResult({ ok: true, value: { url: `${service.origin}/settings/top-up`, balance: caller.account.balance } }),
  );
}

/** Waits (on the service's clock, woken by the job's `ended` event) up to 45 s for an image job to end. */
async function waitForImage({ service, caller }: ToolContext, id: number, signal: AbortSignal | undefined): Promise<void> {
  const job = service.images.get(caller.account.id, id);
  if (!job || signal?.aborted) return;
  await Promise.race([
    service.images.waitFor(job, MAX_TOOL_WAIT_SECONDS * 1000),
    new Promise<void>((resolve) => signal?.addEventListener('abort', () => resolve(), { once: true })),
  ]);
}
