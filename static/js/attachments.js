// Attachments in the composer: pick, drop or paste files; they are sent with the message (multipart)
// through the composer's own file input, shown as removable chips until the message is sent.
(function () {
  "use strict";
  const form = document.getElementById("composer");
  const input = document.getElementById("composer-files");
  const chips = document.getElementById("composer-attachments");
  const text = document.getElementById("composer-input");
  if (!form || !input || !chips || !text) return;

  let files = [];

  // Sizes as the server writes them (Django's filesizeformat, in the page's language): one format.
  function sizeLabel(bytes) {
    const samples = chips.dataset;
    if (bytes === 1) return samples.sizeByte;
    if (bytes < 1024) return samples.sizeBytes.replace("2", String(bytes));
    if (bytes < 1024 * 1024) return samples.sizeKb.replace("1.5", (bytes / 1024).toFixed(1));
    return samples.sizeMb.replace("1.5", (bytes / (1024 * 1024)).toFixed(1));
  }

  function sync() {
    const transfer = new DataTransfer();
    files.forEach((file) => transfer.items.add(file));
    input.files = transfer.files;
    // A message may be files alone: the text is only required when nothing is attached.
    text.required = files.length === 0;
    chips.replaceChildren(
      ...files.map((file, index) => {
        const chip = document.createElement("li");
        chip.className = "attachment-chip";
        const name = document.createElement("span");
        name.className = "attachment-name";
        name.textContent = file.name || "file";
        const meta = document.createElement("span");
        meta.className = "muted small";
        meta.textContent = sizeLabel(file.size) + (file.type ? " · " + file.type : "");
        if (chips.dataset.noVision && (file.type || "").startsWith("image/")) {
          meta.textContent += " · " + chips.dataset.noVision;
        }
        const remove = document.createElement("button");
        remove.type = "button";
        remove.className = "attachment-remove";
        remove.textContent = "×";
        remove.setAttribute("aria-label", (chips.dataset.removeLabel || "Remove") + " " + (file.name || "file"));
        remove.addEventListener("click", () => {
          files.splice(index, 1);
          sync();
          text.focus();
        });
        chip.append(name, " ", meta, remove);
        return chip;
      })
    );
    chips.hidden = files.length === 0;
  }

  function add(list) {
    for (const file of list) {
      // A pasted screenshot has a generic name: give it one a person can tell apart.
      const named =
        file.name && file.name !== "image.png"
          ? file
          : new File([file], "pasted-" + new Date().toISOString().replace(/[:.]/g, "-") + ".png", {
              type: file.type,
            });
      files.push(named);
    }
    sync();
    check();
  }

  // Files are checked as they are picked, by the rules Send applies: every refusal is shown at once,
  // and the refused files leave the list (a file over the count stays until one is removed).
  const errorBox = document.getElementById("composer-error");
  async function check() {
    if (!files.length || !chips.dataset.checkUrl) return;
    // A file over the size limit is refused here (the server would refuse the whole request for it).
    const maxBytes = Number(chips.dataset.maxFileBytes) || Infinity;
    const tooBig = files.filter((file) => file.size > maxBytes);
    const local = tooBig.map((file) => ({
      reason: chips.dataset.tooLarge.replace("%(name)s", file.name).replace("%(limit)s", chips.dataset.limit),
    }));
    const checking = files.filter((file) => file.size <= maxBytes);
    const body = new FormData();
    checking.forEach((file) => body.append("files", file, file.name));
    const token = form.querySelector("input[name=csrfmiddlewaretoken]");
    let refused;
    try {
      const response = await fetch(chips.dataset.checkUrl, {
        method: "POST",
        credentials: "same-origin",
        headers: { "X-Requested-With": "fetch", "X-CSRFToken": token ? token.value : "" },
        body,
      });
      if (!response.ok) return; // Send checks them again
      refused = (await response.json()).refused || [];
      refused = [...local, ...refused];
    } catch (_err) {
      return;
    }
    const dropped = new Set([
      ...tooBig,
      ...refused.filter((r) => Number.isInteger(r.index)).map((r) => checking[r.index]),
    ]);
    files = files.filter((file) => !dropped.has(file));
    sync();
    if (errorBox) {
      errorBox.textContent = refused.map((r) => r.reason).join("\n");
      errorBox.classList.toggle("refusals", refused.length > 0);
    }
  }

  input.addEventListener("change", () => {
    // The picker replaces the input's files: keep what was already chosen and add the new ones.
    const picked = Array.from(input.files);
    add(picked.filter((file) => !files.includes(file)));
  });
  form.addEventListener("dragover", (event) => {
    if (event.dataTransfer && Array.from(event.dataTransfer.types).includes("Files")) {
      event.preventDefault();
      form.classList.add("dropping");
    }
  });
  form.addEventListener("dragleave", () => form.classList.remove("dropping"));
  form.addEventListener("drop", (event) => {
    form.classList.remove("dropping");
    if (event.dataTransfer && event.dataTransfer.files.length) {
      event.preventDefault();
      add(event.dataTransfer.files);
    }
  });
  text.addEventListener("paste", (event) => {
    const pasted = event.clipboardData ? Array.from(event.clipboardData.files) : [];
    if (pasted.length) {
      event.preventDefault();
      add(pasted);
    }
  });
  // thread.js resets the form once the message is accepted; a failed send keeps the files.
  form.addEventListener("reset", () => {
    files = [];
    window.setTimeout(sync, 0);
  });
})();
