// Reads the screenshots the test takes (PNG, 8-bit RGB or RGBA, not
// interlaced, as Chromium writes them) so the test can check what they
// show, and computes WCAG contrast ratios.
import { inflateSync } from 'node:zlib';

/** decodePNG returns {width, height, px(x, y) → [r, g, b]} for a PNG buffer. */
export function decodePNG(buf) {
  if (buf.readUInt32BE(0) !== 0x89504e47) throw new Error('not a PNG');
  let off = 8;
  let width = 0;
  let height = 0;
  let channels = 0;
  const idat = [];
  while (off < buf.length) {
    const len = buf.readUInt32BE(off);
    const type = buf.toString('ascii', off + 4, off + 8);
    const data = buf.subarray(off + 8, off + 8 + len);
    if (type === 'IHDR') {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      const depth = data[8];
      const colour = data[9];
      if (depth !== 8 || (colour !== 2 && colour !== 6) || data[12] !== 0) throw new Error(`unsupported PNG (depth ${depth}, colour type ${colour})`);
      channels = colour === 6 ? 4 : 3;
    } else if (type === 'IDAT') idat.push(data);
    else if (type === 'IEND') break;
    off += 12 + len;
  }
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  const out = Buffer.alloc(height * stride);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)];
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let x = 0; x < stride; x++) {
      const a = x >= channels ? out[y * stride + x - channels] : 0;
      const b = y > 0 ? out[(y - 1) * stride + x] : 0;
      const c = x >= channels && y > 0 ? out[(y - 1) * stride + x - channels] : 0;
      let v = line[x];
      if (filter === 1) v += a;
      else if (filter === 2) v += b;
      else if (filter === 3) v += (a + b) >> 1;
      else if (filter === 4) {
        const p = a + b - c;
        const pa = Math.abs(p - a);
        const pb = Math.abs(p - b);
        const pc = Math.abs(p - c);
        v += pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      }
      out[y * stride + x] = v & 0xff;
    }
  }
  return {
    width, height,
    px: (x, y) => { const i = y * stride + x * channels; return [out[i], out[i + 1], out[i + 2]]; },
  };
}

/** luminance is the WCAG relative luminance of an [r, g, b] colour (0–255). */
export function luminance([r, g, b]) {
  const lin = (c) => { const s = c / 255; return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4; };
  return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
}

/** contrast is the WCAG contrast ratio of two colours. */
export function contrast(a, b) {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05);
}

/** region summarises a rectangle of a decoded image: mean luminance and how many distinct colours it has. */
export function region(img, { x = 0, y = 0, width = img.width, height = img.height } = {}) {
  let sum = 0;
  let n = 0;
  const colours = new Set();
  const x0 = Math.max(0, Math.floor(x));
  const y0 = Math.max(0, Math.floor(y));
  const x1 = Math.min(img.width, Math.ceil(x + width));
  const y1 = Math.min(img.height, Math.ceil(y + height));
  for (let yy = y0; yy < y1; yy += 2) {
    for (let xx = x0; xx < x1; xx += 2) {
      const p = img.px(xx, yy);
      sum += luminance(p);
      n++;
      colours.add(p.join(','));
    }
  }
  return { mean: n ? sum / n : 0, colours: colours.size };
}

/** hasColour reports whether a rectangle holds a pixel within tol of colour. */
export function hasColour(img, box, colour, tol = 24) {
  for (let yy = Math.max(0, Math.floor(box.y)); yy < Math.min(img.height, box.y + box.height); yy++) {
    for (let xx = Math.max(0, Math.floor(box.x)); xx < Math.min(img.width, box.x + box.width); xx++) {
      const p = img.px(xx, yy);
      if (Math.abs(p[0] - colour[0]) <= tol && Math.abs(p[1] - colour[1]) <= tol && Math.abs(p[2] - colour[2]) <= tol) return true;
    }
  }
  return false;
}
