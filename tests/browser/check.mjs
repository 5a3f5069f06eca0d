// Opens report.html in headless Chromium and prints what a person would
// see, as JSON: console and page errors, the marks each chart drew, the
// order of the per-scenario table after sorting by final success. Saves
// a screenshot. Usage: node check.mjs REPORT_HTML SCREENSHOT_PNG CHROMIUM
import { chromium } from 'playwright-core';
import { pathToFileURL } from 'node:url';

const [report, screenshot, executablePath] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
const errors = [];
page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
page.on('pageerror', (e) => errors.push(String(e)));
page.on('request', (r) => { if (!r.url().startsWith('file:')) errors.push(`network: ${r.url()}`); });
await page.goto(pathToFileURL(report).href);

const charts = await page.$$eval('svg[role="img"]', (svgs) => svgs.map((svg) => ({
  title: svg.getAttribute('aria-label'),
  marks: svg.querySelectorAll('.mark').length,
  drawn: [...svg.querySelectorAll('.mark')].filter((m) => m.getBBox().width > 0).length,
})));
const column = async () => page.$$eval('#cells tbody tr', (rows) =>
  rows.map((r) => parseFloat(r.cells[4].dataset.v)));
const before = await column();
const header = page.locator('#cells th', { hasText: 'final success' });
await header.click();
const ascending = await column();
await header.click();
const descending = await column();
await page.selectOption('#model', { index: 1 });
const shown = await page.$$eval('#cells tbody tr', (rows) =>
  rows.filter((r) => r.style.display !== 'none').map((r) => r.dataset.model));
await page.selectOption('#model', { index: 0 });
await page.screenshot({ path: screenshot, fullPage: true });
await browser.close();
console.log(JSON.stringify({ errors, charts, before, ascending, descending, shown }));
