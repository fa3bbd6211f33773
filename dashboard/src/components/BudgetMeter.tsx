import { formatMoney } from '../format'
import type { Mandate } from '../types'

/** How much of a mandate's budget is used: a meter, and the same in words for everyone. */
export function BudgetMeter({ mandate }: { mandate: Mandate }) {
  const used = formatMoney(mandate.amount_used, mandate.currency)
  const budget = formatMoney(mandate.budget_amount, mandate.currency)
  const percent = mandate.budget_amount > 0 ? Math.round((mandate.amount_used / mandate.budget_amount) * 100) : 0
  const text = `${used} of ${budget} used (${percent}%)`
  return (
    <span class="budget">
      <meter min={0} max={mandate.budget_amount} value={mandate.amount_used} optimum={0} high={mandate.budget_amount * 0.8} aria-label={`Budget used: ${text}`} />
      <span aria-hidden="true">{text}</span>
    </span>
  )
}
