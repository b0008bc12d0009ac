// What an agent writes to chart a CSV without a charting package: the
// uploaded /work/sales.csv summed by region, drawn as a bar chart in a PNG
// made by hand (stored deflate blocks, CRC-32, Adler-32), shown with
// display() and kept in /work beside a JSON summary.
import fs from "node:fs";

const rows = fs.readFileSync("sales.csv", "utf8").trim().split("\n").slice(1).map((line) => line.split(","));
const totals = {};
for (const [region, amount] of rows) totals[region] = (totals[region] ?? 0) + Number(amount);
const regions = Object.keys(totals).sort();

const width = 16 * regions.length, height = 40;
const pixels = new Uint8Array(height * (1 + width * 3)).fill(255);
const max = Math.max(...Object.values(totals));
regions.forEach((region, i) => {
  const bar = Math.round((totals[region] / max) * (height - 2));
  for (let y = height - bar; y < height; y++) {
    for (let x = i * 16 + 3; x < i * 16 + 13; x++) {
      const at = y * (1 + width * 3) + 1 + x * 3;
      pixels.set([40, 90 + 50 * i, 200], at);
    }
  }
});
for (let y = 0; y < height; y++) pixels[y * (1 + width * 3)] = 0; // filter: none

const crcTable = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
const crc32 = (bytes) => {
  let c = 0xffffffff;
  for (const b of bytes) c = crcTable[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
};
const u32 = (n) => [(n >>> 24) & 255, (n >>> 16) & 255, (n >>> 8) & 255, n & 255];
const chunk = (type, data) => {
  const body = [...type].map((c) => c.charCodeAt(0)).concat([...data]);
  return [...u32(data.length), ...body, ...u32(crc32(body))];
};
const zlib = (data) => {
  const out = [0x78, 0x01];
  for (let i = 0; i < data.length; i += 65535) {
    const block = data.subarray(i, i + 65535);
    const last = i + 65535 >= data.length ? 1 : 0;
    out.push(last, block.length & 255, block.length >> 8, ~block.length & 255, (~block.length >> 8) & 255, ...block);
  }
  let a = 1, b = 0;
  for (const byte of data) { a = (a + byte) % 65521; b = (b + a) % 65521; }
  return out.concat(u32(((b << 16) | a) >>> 0));
};
const png = new Uint8Array([
  0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a,
  ...chunk("IHDR", [...u32(width), ...u32(height), 8, 2, 0, 0, 0]),
  ...chunk("IDAT", zlib(pixels)),
  ...chunk("IEND", []),
]);

fs.writeFileSync("chart.png", png);
fs.writeFileSync("summary.json", JSON.stringify(totals));
display(png, { name: "chart.png" });
totals
