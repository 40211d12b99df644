import { isEmail, IsInt, IsOptional, Max, MaxLength, Min, ValidateBy, type ValidationOptions } from 'class-validator';
import { PRINTABLE } from '../common/validation.js';

/**
 * One million in cents. The column is an int, and the nightly report sums
 * every order: a bound this far below the int's range keeps both sane.
 */
export const MAX_ORDER_CENTS = 100_000_000;

const EMAIL = 'email must be an email address of at most 254 characters, such as ada@example.com';
const TOTAL = `totalCents must be a whole number of cents from 0 to ${MAX_ORDER_CENTS}, such as 1250 for 12.50 (or leave it out for 0)`;

/**
 * @IsEmail, refusing first what it cannot look at: validator's isEmail measures
 * the address with encodeURI, which throws (URIError, a 500) on a lone UTF-16
 * surrogate, so the text must be printable before it is asked.
 */
function IsEmailAddress(options: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isEmailAddress',
      validator: { validate: (value) => typeof value === 'string' && PRINTABLE.test(value) && isEmail(value) },
    },
    options,
  );
}

/** POST /orders. JSON numbers only: "1250" as a string is refused, not guessed at. */
export class CreateOrderDto {
  @IsEmailAddress({ message: EMAIL })
  @MaxLength(254, { message: EMAIL })
  email!: string;

  @IsOptional()
  @IsInt({ message: TOTAL })
  @Min(0, { message: TOTAL })
  @Max(MAX_ORDER_CENTS, { message: TOTAL })
  totalCents?: number;
}
