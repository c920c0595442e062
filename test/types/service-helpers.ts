import type { z } from 'zod';
import type * as Plain from '../../src/service/testing/contract/helper-types.js';
import type * as Helpers from '../../src/service/testing/contract/test-helpers.js';
import type * as Seed from '../../src/service/testing/contract/seed.js';
import type { Equal, Expect } from './type-checks.js';

// Issue 29 item 15: each plain type the test helpers publish (helper-types.ts) is exactly its schema's
// `z.input` (what a request takes) or `z.output` (what an answer holds). A schema changed without its plain
// type, or the other way round, fails `npm run typecheck` here.
export type Checks = [
  Expect<Equal<Plain.TestClock, z.output<typeof Helpers.Clock>>>,
  Expect<Equal<Plain.AdvanceClockRequest, z.input<typeof Helpers.AdvanceRequest>>>,
  Expect<Equal<Plain.CreateTestAccountRequest, z.input<typeof Helpers.CreateTestAccountRequest>>>,
  Expect<Equal<Plain.TestAccount, z.output<typeof Helpers.TestAccount>>>,
  Expect<Equal<Plain.TestAccountSummary, z.output<typeof Helpers.TestAccountSummary>>>,
  Expect<Equal<Plain.TestAccountList, z.output<typeof Helpers.TestAccountList>>>,
  Expect<Equal<Plain.DeletedTestAccount, z.output<typeof Helpers.DeletedTestAccount>>>,
  Expect<Equal<Plain.ResetResponse, z.output<typeof Helpers.ResetResponse>>>,
  Expect<Equal<Plain.JournalEntry, z.output<typeof Helpers.JournalEntry>>>,
  Expect<Equal<Plain.JournalList, z.output<typeof Helpers.JournalList>>>,
  Expect<Equal<Plain.JournalCleared, z.output<typeof Helpers.JournalCleared>>>,
  Expect<Equal<Plain.CreateFaultRuleRequest, z.input<typeof Helpers.FaultRuleRequest>>>,
  Expect<Equal<Plain.FaultRuleAction, z.input<typeof Helpers.FaultAction>>>,
  Expect<Equal<Plain.FaultRule, z.output<typeof Helpers.FaultRule>>>,
  Expect<Equal<Plain.FaultRuleList, z.output<typeof Helpers.FaultRuleList>>>,
  Expect<Equal<Plain.DeletedFaultRule, z.output<typeof Helpers.DeletedFaultRule>>>,
  Expect<Equal<Plain.WebhookChaosMode, Helpers.ChaosMode>>,
  Expect<Equal<Plain.WebhookChaosRequest, z.input<typeof Helpers.WebhookChaosRequest>>>,
  Expect<Equal<Plain.WebhookChaos, z.output<typeof Helpers.WebhookChaos>>>,
  Expect<Equal<Plain.SeedAccountEntry, z.input<typeof Seed.SeedAccount>>>,
  Expect<Equal<Plain.SeedAssetEntry, z.input<typeof Seed.SeedAsset>>>,
  Expect<Equal<Plain.SeedClipEntry, z.input<typeof Seed.SeedClip>>>,
  Expect<Equal<Plain.SeedImageEntry, z.input<typeof Seed.SeedImage>>>,
  Expect<Equal<Plain.SeedFixture, z.input<typeof Seed.SeedFixture>>>,
  Expect<Equal<Plain.SeedResult, z.output<typeof Seed.SeedResult>>>,
];
