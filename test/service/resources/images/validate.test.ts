import { describe, expect, it } from 'vitest';
import { PROBLEM_CODES } from '../../../../src/protocol/problem.js';
import { TEMPLATES } from '../../../../src/service/contract/templates.js';
import { ImageRequest, unsupportedScript, type ImageCommand } from '../../../../src/service/contract/images.js';
import { refusalOf } from '../../../../src/service/contract/problems.js';

// The rules of POST /images are the contract's schema (issue 21); the refusal is the one the one mapper
// from zod issues to spec codes makes of its first issue, as the HTTP pipeline answers it.
function ok(body: unknown): ImageCommand {
  const result = ImageRequest.safeParse(body, { reportInput: true });
  if (!result.success) throw new Error(`refused: ${refusalOf(ImageRequest, result.error.issues, body).code} ${result.error.message}`);
  return result.data;
}

function refused(body: unknown) {
  const result = ImageRequest.safeParse(body, { reportInput: true });
  if (result.success) throw new Error('accepted');
  const refusal = refusalOf(ImageRequest, result.error.issues, body);
  return { ...refusal, status: PROBLEM_CODES[refusal.code].status };
}

describe('POST /images body (spec 4.7)', () => {
  it('applies the defaults and prices the job (spec 2.13)', () => {
    expect(ok({ description: 'a lighthouse at dawn' })).toMatchObject({
      type: 'image', template: null, aspectRatio: '1:1', quality: 'standard', count: 1, character: null, assetIds: [], imageUrls: [], price: 2,
    });
    expect(ok({ prompt: 'x', quality: 'hd', count: 4 }).price).toBe(14);
    expect(ok({ prompt: 'x', count: 4 }).price).toBe(7);
    expect(ok({ prompt: 'x', quality: 'hd' }).price).toBe(4);
  });

  it('description and its alias prompt: up to 1000 characters, required unless a template', () => {
    expect(ok({ prompt: 'a cat' }).description).toBe('a cat');
    expect(refused({})).toMatchObject({ status: 400, code: 'missing_input' });
    expect(refused({ description: 'a', prompt: 'b' })).toMatchObject({ status: 400, code: 'invalid_parameter', extra: { parameter: 'prompt' } });
    expect(ok({ description: 'x'.repeat(1000) }).description).toHaveLength(1000);
    expect(refused({ description: 'x'.repeat(1001) })).toMatchObject({ status: 400, code: 'invalid_parameter', detail: 'description is 1001 characters; the limit is 1000.', extra: { parameter: 'description' } });
    // Issue 21: each field is checked as sent, so the alias is named by its own name.
    expect(refused({ prompt: 'x'.repeat(1001) })).toMatchObject({ status: 400, code: 'invalid_parameter', detail: 'prompt is 1001 characters; the limit is 1000.', extra: { parameter: 'prompt' } });
    expect(refused({ prompt: 'x'.repeat(900 * 1024) })).toMatchObject({ status: 400, code: 'invalid_parameter', extra: { parameter: 'prompt' } });
  });

  it('takes English, Arabic or Chinese, and refuses other scripts (text_script_unsupported)', () => {
    for (const text of ['Happy birthday!', 'عيد مبارك', '新年快乐', 'Café 2026 🎉', 'Ramadan رمضان']) expect(ok({ description: text, text: text.slice(0, 20) }).description).toBe(text);
    expect(refused({ description: 'Привет' })).toMatchObject({ status: 422, code: 'text_script_unsupported' });
    expect(refused({ description: 'a card', text: 'Καλημέρα' }).detail).toContain('Greek');
    expect(refused({ template: 'eid', fields: { greeting: 'שלום' } })).toMatchObject({ code: 'text_script_unsupported' });
    expect(unsupportedScript('こんにちは')).toBe('Hiragana');
    expect(unsupportedScript('안녕')).toBe('Hangul');
  });

  it('type: image or character; a character needs age and style from the lists and takes no photos', () => {
    expect(ok({ type: 'character', character: { age: '26-35', style: 'cinematic' } })).toMatchObject({ type: 'character', count: 4, price: 5, character: { age: '26-35', style: 'cinematic' } });
    expect(refused({ type: 'robot', prompt: 'x' })).toMatchObject({ code: 'invalid_parameter', extra: { allowed_values: ['image', 'character'], parameter: 'type' } });
    expect(refused({ type: 'character', character: { style: 'photo' } })).toMatchObject({ status: 400, code: 'field_required' });
    expect(refused({ type: 'character', character: { age: '26-35' } })).toMatchObject({ code: 'field_required' });
    expect(refused({ type: 'character', character: { age: '12-17', style: 'photo' } })).toMatchObject({ code: 'preset_not_found' });
    expect(refused({ type: 'character', character: { age: '51+', style: 'oil' } })).toMatchObject({ code: 'preset_not_found' });
    expect(refused({ type: 'character', character: { age: '51+', style: 'photo' }, asset_ids: [1] })).toMatchObject({ status: 400, code: 'character_no_photos' });
    expect(refused({ type: 'character', character: { age: '51+', style: 'photo' }, image_urls: ['https://example.com/a.jpg'], subject_consent: 'self' })).toMatchObject({ code: 'character_no_photos' });
  });

  it('text: up to 60 characters', () => {
    expect(ok({ prompt: 'a card', text: 'x'.repeat(60) }).text).toHaveLength(60);
    expect(refused({ prompt: 'a card', text: 'x'.repeat(61) })).toMatchObject({ status: 400, code: 'invalid_parameter', extra: { parameter: 'text' } });
  });

  it('aspect_ratio, quality, count: the listed values', () => {
    for (const ratio of ['1:1', '9:16', '4:5', '16:9', '3:4']) expect(ok({ prompt: 'x', aspect_ratio: ratio }).aspectRatio).toBe(ratio);
    expect(refused({ prompt: 'x', aspect_ratio: '21:9' })).toMatchObject({ status: 400, code: 'invalid_ratio' });
    expect(refused({ prompt: 'x', quality: 'ultra' })).toMatchObject({ code: 'invalid_parameter', extra: { allowed_values: ['standard', 'hd'], parameter: 'quality' } });
    expect(refused({ prompt: 'x', count: 2 })).toMatchObject({ code: 'invalid_parameter', extra: { allowed_values: [1, 4], parameter: 'count' } });
  });

  it('asset_ids and image_urls: up to 3 together, URLs need subject_consent', () => {
    expect(ok({ prompt: 'x', asset_ids: [1, 2], image_urls: ['https://example.com/a.jpg'], subject_consent: 'permission' }).assetIds).toEqual([1, 2]);
    expect(refused({ prompt: 'x', asset_ids: [1, 2], image_urls: ['https://example.com/a.jpg', 'https://example.com/b.jpg'], subject_consent: 'self' })).toMatchObject({ status: 400, code: 'too_many_images' });
    expect(refused({ prompt: 'x', asset_ids: [0] })).toMatchObject({ status: 400, code: 'invalid_asset_id' });
    expect(refused({ prompt: 'x', image_urls: ['ftp://x/a.jpg'], subject_consent: 'self' })).toMatchObject({ status: 400, code: 'invalid_image_url' });
    expect(refused({ prompt: 'x', image_urls: ['https://example.com/a.jpg'] })).toMatchObject({ status: 422, code: 'consent_required' });
    expect(ok({ prompt: 'x', image_urls: ['https://example.com/a.jpg'], subject_consent: 'third_party_with_permission' }).subjectConsent).toBe('permission');
    expect(refused({ prompt: 'x', image_urls: [`https://example.com/${'a'.repeat(2048)}`], subject_consent: 'self' })).toMatchObject({ status: 400, code: 'invalid_image_url' });
  });

  it('max_credits: refused with cost_exceeds_max (and the cost) when the job would cost more', () => {
    expect(ok({ prompt: 'x', count: 4, max_credits: 7 }).maxCredits).toBe(7);
    expect(refused({ prompt: 'x', count: 4, max_credits: 6 })).toMatchObject({ status: 422, code: 'cost_exceeds_max', extra: { cost: 7 } });
  });
});

describe('templates (spec 4.8), row by row', () => {
  it('cards: presets default to the first, greeting is optional, no photos', () => {
    for (const template of ['eid', 'diwali', 'national_day', 'festive', 'celebration'] as const) {
      const command = ok({ template });
      for (const [name, field] of Object.entries(TEMPLATES[template].fields)) {
        if (field.kind === 'preset') expect(command.fields[name]).toBe(field.values[0]);
      }
      expect(command.fields.greeting).toBeUndefined();
      expect(ok({ template, fields: { greeting: 'Best wishes' } }).fields.greeting).toBe('Best wishes');
      expect(refused({ template, asset_ids: [1] })).toMatchObject({ code: 'too_many_images' });
    }
    expect(ok({ template: 'festive', fields: { occasion: 'lunar_new_year', look: 'illustrated' } }).fields).toMatchObject({ occasion: 'lunar_new_year', look: 'illustrated' });
    expect(refused({ template: 'eid', fields: { style: 'neon' } })).toMatchObject({ status: 400, code: 'preset_not_found', extra: { allowed_values: ['emerald_gold', 'pastel', 'midnight', 'minimal'] } });
    expect(refused({ template: 'eid', fields: { colour: 'red' } })).toMatchObject({ status: 400, code: 'invalid_parameter', extra: { parameter: 'fields.colour' } });
    expect(refused({ template: 'eid', fields: { greeting: 'x'.repeat(61) } })).toMatchObject({ status: 400, code: 'invalid_parameter', extra: { parameter: 'fields.greeting' } });
  });

  it('an unknown template is preset_not_found; fields without a template are refused', () => {
    expect(refused({ template: 'halloween' })).toMatchObject({ status: 400, code: 'preset_not_found' });
    expect(refused({ prompt: 'x', fields: { style: 'pastel' } })).toMatchObject({ status: 400, code: 'invalid_parameter', extra: { parameter: 'fields' } });
  });

  it('headshot: 1 photo of the person with subject_consent self or permission', () => {
    expect(ok({ template: 'headshot', asset_ids: [4], subject_consent: 'self' }).fields).toEqual({ outfit: 'blazer', background: 'studio' });
    expect(refused({ template: 'headshot' })).toMatchObject({ status: 400, code: 'photos_required' });
    expect(refused({ template: 'headshot', asset_ids: [4, 5], subject_consent: 'self' })).toMatchObject({ code: 'too_many_images' });
    expect(refused({ template: 'headshot', asset_ids: [4] })).toMatchObject({ status: 422, code: 'consent_required' });
    expect(refused({ template: 'headshot', asset_ids: [4], subject_consent: 'no_real_person' })).toMatchObject({ code: 'consent_required' });
  });

  it('product: 1-3 product photos', () => {
    expect(ok({ template: 'product', asset_ids: [1, 2, 3], fields: { scene: 'marble' } }).fields.scene).toBe('marble');
    expect(refused({ template: 'product' })).toMatchObject({ code: 'photos_required' });
    expect(refused({ template: 'product', asset_ids: [1, 2, 3, 4] })).toMatchObject({ code: 'too_many_images' });
  });

  it('poster: headline required, subject optional text, look from the list', () => {
    expect(ok({ template: 'poster', fields: { headline: 'Grand opening', subject: 'a bakery' } }).fields).toEqual({ headline: 'Grand opening', subject: 'a bakery', look: 'bold' });
    expect(refused({ template: 'poster' })).toMatchObject({ status: 400, code: 'field_required' });
    expect(refused({ template: 'poster', fields: { headline: '  ' } })).toMatchObject({ code: 'field_required' });
  });
});
