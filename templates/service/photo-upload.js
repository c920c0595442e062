// The photo upload page (cliphook serve, issue 15): a preview of the chosen photo, the form's checks said in
// words on the page instead of the browser's bubbles, and a post that keeps the page (and the chosen file)
// when the service refuses the photo. Without this script the form still posts and the service answers pages.
const form = document.getElementById('photo-upload');
const message = document.getElementById('message');
const fileInput = document.getElementById('photo-file');
const preview = document.getElementById('photo-preview');
const consent = document.getElementById('photo-consent');
const submit = document.getElementById('photo-submit');
const received = document.getElementById('photo-received');
const maxBytes = Number(form?.dataset.maxBytes ?? 20 * 1024 * 1024);
const TYPES = /^image\/(jpeg|png|webp|gif|heic|heif)$/;
const EXTENSIONS = /\.(jpe?g|png|webp|gif|heic|heif)$/i;
let previewUrl = null;

if (form) {
  form.noValidate = true;
  fileInput.addEventListener('change', showPreview);
  consent.addEventListener('change', () => consent.removeAttribute('aria-invalid'));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void send();
  });
}

/** Shows `text` in the message area; an error is announced (role="alert") and takes the focus. */
function say(kind, text) {
  const box = document.createElement('div');
  box.className = `notice ${kind}`;
  box.setAttribute('role', kind === 'error' ? 'alert' : 'status');
  box.tabIndex = -1;
  const p = document.createElement('p');
  p.textContent = text;
  box.append(p);
  message.replaceChildren(box);
  if (kind === 'error') box.focus();
}

function showPreview() {
  fileInput.removeAttribute('aria-invalid');
  if (previewUrl) URL.revokeObjectURL(previewUrl);
  previewUrl = null;
  preview.hidden = true;
  const file = fileInput.files?.[0];
  if (!file) return;
  const problem = checkFile(file);
  if (problem) return say('error', problem);
  message.replaceChildren();
  previewUrl = URL.createObjectURL(file);
  // HEIC does not display in most browsers: no preview then, the upload still works.
  preview.onerror = () => {
    preview.hidden = true;
  };
  preview.onload = () => {
    preview.hidden = false;
  };
  preview.src = previewUrl;
}

/** The service checks the bytes; this only spares a person a long upload that would be refused. */
function checkFile(file) {
  if (!TYPES.test(file.type) && !EXTENSIONS.test(file.name)) return 'This file is not a photo the service takes. Choose a JPG, PNG, WebP, GIF or HEIC image.';
  if (file.size > maxBytes) return 'This photo is larger than 20 MB. Choose a smaller one.';
  if (file.size === 0) return 'This file is empty. Choose another photo.';
  return null;
}

async function send() {
  const file = fileInput.files?.[0];
  if (!file) {
    fileInput.setAttribute('aria-invalid', 'true');
    say('error', 'Choose a photo first.');
    return fileInput.focus();
  }
  const problem = checkFile(file);
  if (problem) {
    fileInput.setAttribute('aria-invalid', 'true');
    say('error', problem);
    return fileInput.focus();
  }
  if (!form.querySelector('input[name="subject_consent"]:checked')) {
    consent.setAttribute('aria-invalid', 'true');
    say('error', 'Choose who is in the photo.');
    return form.querySelector('input[name="subject_consent"]').focus();
  }
  submit.disabled = true;
  say('status', 'Uploading…');
  try {
    const res = await fetch(form.action, { method: 'POST', body: new FormData(form), headers: { accept: 'application/json' }, credentials: 'same-origin' });
    const body = await res.json().catch(() => ({}));
    if (res.ok) return done();
    // 404 and 410: the link itself no longer works, so the form goes.
    if (res.status === 404 || res.status === 410) form.hidden = true;
    say('error', body.detail || `The upload failed (HTTP ${res.status}). Try again.`);
  } catch {
    say('error', 'The upload did not reach the service. Check the connection and try again.');
  } finally {
    submit.disabled = false;
  }
}

function done() {
  form.hidden = true;
  message.replaceChildren();
  received.hidden = false;
  received.querySelector('[tabindex="-1"]')?.focus();
  if (previewUrl) URL.revokeObjectURL(previewUrl);
}
