// An empty thread's starter prompts: a button puts its prompt in the composer and sends it (the composer's
// own submit, so thread.js sends it as any message). The agent's introduction leaves with the empty note.
(() => {
  "use strict";
  const intro = document.getElementById("agent-intro");
  const empty = document.getElementById("transcript-empty");
  if (!intro) return;
  if (empty) {
    new MutationObserver(() => { intro.hidden = empty.hidden; }).observe(empty, { attributes: true, attributeFilter: ["hidden"] });
  }
  intro.addEventListener("click", (event) => {
    const button = event.target.closest("button.starter");
    const composer = document.getElementById("composer");
    const input = document.getElementById("composer-input");
    if (!button || !composer || !input) return;
    input.value = button.dataset.prompt || "";
    input.focus();
    composer.requestSubmit();
  });
})();
