// The event timeline: a virtual list (rows of a fixed height, only the visible ones in the page),
// so a run of any length costs the rows on screen. New events are taken in as they come (the
// filter is applied to each once); a new filter goes over the events once.

import { h, clear } from "./dom.js";

const ROW = 20; // px, as .timeline .row in console.css

export class Timeline {
  constructor(scroller, onPick) {
    this.scroller = scroller;
    this.onPick = onPick;
    this.spacer = h("div", { class: "spacer" });
    scroller.append(this.spacer);
    this.rows = [];
    this.thread = null;
    this.filter = "";
    this.shown = []; // indexes of the events passing the filter
    this.seen = 0; // events looked at
    this.follow = true; // keep the newest row in view
    this.selected = -1;
    scroller.addEventListener("scroll", () => {
      const bottom = this.scroller.scrollHeight - this.scroller.clientHeight;
      this.follow = this.scroller.scrollTop >= bottom - ROW;
      this.paint();
    });
    scroller.addEventListener("click", (e) => {
      const row = e.target.closest(".row");
      if (row && row.dataset.index) {
        this.selected = Number(row.dataset.index);
        this.onPick(this.thread.events[this.selected], this.selected);
        this.paint();
      }
    });
  }

  show(thread) {
    this.thread = thread;
    this.selected = -1;
    this.refilter();
  }

  setFilter(type) {
    this.filter = type;
    this.refilter();
  }

  refilter() {
    this.shown = [];
    this.seen = 0;
    this.update();
  }

  // Take in the events that came since the last call, and paint.
  update() {
    const events = this.thread ? this.thread.events : [];
    if (events.length < this.seen) this.seen = 0;
    for (let i = this.seen; i < events.length; i++) {
      if (!this.filter || events[i].type === this.filter) this.shown.push(i);
    }
    this.seen = events.length;
    this.spacer.style.height = `${this.shown.length * ROW}px`;
    if (this.follow) this.scroller.scrollTop = this.scroller.scrollHeight;
    this.paint();
  }

  paint() {
    // (scrollTop may not be clamped yet when the list has just shrunk)
    const first = Math.max(0, Math.min(Math.floor(this.scroller.scrollTop / ROW), this.shown.length - 1));
    const count = Math.min(this.shown.length - first, Math.ceil(this.scroller.clientHeight / ROW) + 1);
    while (this.rows.length < count) {
      const row = h("div", { class: "row" }, h("span", { class: "i" }), h("span", { class: "t" }), h("span", { class: "type" }), h("span", { class: "size" }));
      this.rows.push(row);
      this.spacer.append(row);
    }
    const events = this.thread ? this.thread.events : [];
    for (let r = 0; r < this.rows.length; r++) {
      const row = this.rows[r];
      if (r >= count) {
        row.hidden = true;
        continue;
      }
      const index = this.shown[first + r];
      const item = events[index];
      row.hidden = false;
      row.style.top = `${(first + r) * ROW}px`;
      row.dataset.index = String(index);
      row.classList.toggle("selected", index === this.selected);
      row.classList.toggle("error", item.type === "RUN_ERROR");
      const [i, t, type, size] = row.children;
      i.textContent = String(index);
      t.textContent = `${Math.round(item.time)} ms`;
      type.textContent = item.type;
      size.textContent = `${item.size} B`;
    }
  }

  clear() {
    clear(this.spacer);
    this.rows = [];
  }
}
