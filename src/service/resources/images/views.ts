import type { ImageItem, ImageJob } from './job.js';

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

/** The permanent, unguessable link of an image file (spec 2.7 `url`) and of its preview. */
export function imageFileUrl(origin: string, image: ImageItem): { url: string; thumbnail_url: string } {
  return {
    url: `${origin}/files/images/${image.token}.${image.format === 'png' ? 'png' : 'jpg'}`,
    thumbnail_url: `${origin}/files/images/${image.thumbToken}.webp`,
  };
}

/** An image job (spec 2.7) as POST /images, GET /images/{id} and the list show it. */
export function imageJobView(job: ImageJob, origin: string, estimateSeconds: number) {
  const ended = job.status !== 'generating';
  return {
    id: job.id,
    object: 'image_job' as const,
    status: job.status,
    type: job.command.type,
    quality: job.command.quality,
    aspect_ratio: job.command.aspectRatio,
    count: job.command.count,
    credits_reserved: job.creditsReserved,
    credits_charged: job.creditsCharged,
    ...(ended ? { credits_refunded: job.creditsRefunded } : {}),
    images: job.images.map((image) => ({
      id: image.id,
      ...imageFileUrl(origin, image),
      width: image.width,
      height: image.height,
      format: image.format,
      animate: image.animate,
      trusted_until: iso(image.trustedUntil),
    })),
    estimated_time_seconds: estimateSeconds,
    poll_url: `${origin}/v1/images/${job.id}`,
    ...(job.status === 'failed' && job.errorCode !== null ? { error_code: job.errorCode } : {}),
    created_at: iso(job.createdAt),
    completed_at: iso(job.completedAt),
  };
}
